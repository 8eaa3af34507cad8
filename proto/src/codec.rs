//! The gRPC codec of the `berth.v1` services: prost's, with smaller per-stream buffers.
//!
//! tonic gives every stream an encode and a decode buffer of 8 KiB, allocated when the
//! stream opens and kept while it is open. A scheduler holds a session stream open for each
//! node (5,000 nodes: 80 MB of buffers), whose messages are mostly far smaller; the buffers
//! grow for a larger message as before.
//!
//! Its encoder reserves room for the whole message before encoding it, so that a large
//! message (a list of thousands of objects) is written into one allocation instead of a
//! buffer that grows from 1 KiB by doubling, copying what it holds at each step.

use std::marker::PhantomData;

use tonic::codec::{BufferSettings, Codec, EncodeBuf, Encoder};
use tonic::Status;
use tonic_prost::ProstDecoder;

/// Bytes each stream's encode and decode buffer starts with (tonic's default is 8 KiB).
pub const STREAM_BUFFER_BYTES: usize = 1024;

/// Encoded bytes past which a stream's encoder yields a frame (tonic's default, 32 KiB).
const YIELD_THRESHOLD: usize = 32 * 1024;

/// prost's codec with [`STREAM_BUFFER_BYTES`] buffers; the generated `berth.v1` clients and
/// servers use it.
#[derive(Debug)]
pub struct SmallBufferCodec<T, U>(PhantomData<(T, U)>);

impl<T, U> Default for SmallBufferCodec<T, U> {
    fn default() -> Self {
        SmallBufferCodec(PhantomData)
    }
}

fn settings() -> BufferSettings {
    BufferSettings::new(STREAM_BUFFER_BYTES, YIELD_THRESHOLD)
}

impl<T, U> Codec for SmallBufferCodec<T, U>
where
    T: prost::Message + Send + 'static,
    U: prost::Message + Default + Send + 'static,
{
    type Encode = T;
    type Decode = U;
    type Encoder = ReservingEncoder<T>;
    type Decoder = ProstDecoder<U>;

    fn encoder(&mut self) -> Self::Encoder {
        ReservingEncoder(PhantomData)
    }

    fn decoder(&mut self) -> Self::Decoder {
        ProstDecoder::new(settings())
    }
}

/// prost's encoding of `T`, into a buffer first grown to the message's encoded length.
#[derive(Debug)]
pub struct ReservingEncoder<T>(PhantomData<T>);

impl<T: prost::Message> Encoder for ReservingEncoder<T> {
    type Item = T;
    type Error = Status;

    fn encode(&mut self, item: T, buf: &mut EncodeBuf<'_>) -> Result<(), Status> {
        buf.reserve(item.encoded_len());
        item.encode(buf)
            .map_err(|e| Status::internal(format!("encoding a message: {e}")))
    }

    fn buffer_settings(&self) -> BufferSettings {
        settings()
    }
}
