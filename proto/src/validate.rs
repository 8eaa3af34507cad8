//! Validation rules of the API, shared by the CLI (before sending) and the server
//! (admission): names, labels, quantities, selectors, scheduling fields.
