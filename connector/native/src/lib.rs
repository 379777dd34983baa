//! vectordb-connector's native speedups, where Python is the floor: each function does what the
//! connector's Python path does, with Python's lock released where it reads no Python objects, and
//! gives the same result (the tests run both against the same rules).
//!
//! - `decode_base64_reply`: an OpenAI embeddings reply with base64 vectors into float32 rows.
//! - `encode_float32_rows`: the rows of a float32 matrix as the JSON arrays a REST body carries.
//! - `float32_from_numbers`: a list or tuple of Python numbers as float32 bytes (this one holds the
//!   lock: it reads Python objects).
//! - `frame_rows`: the repeated row messages of a gRPC request around a float32 matrix, in one bytes
//!   object written once.
//! - `encode_struct`: a metadata dict as a `google.protobuf.Struct` (holds the lock: Python objects).
//! - `point_ids`: ids as Qdrant takes them (integers, UUIDs, the UUIDv5 of any other text).
//! - `qdrant_point_heads`: each Qdrant point's id and payload (`qdrant.Value`s) as the bytes of its
//!   `PointStruct` before the vectors (holds the lock).
//! - `pinecone_vector_parts`: each Pinecone `Vector`'s id before its values and metadata after them
//!   (holds the lock).

use pyo3::prelude::*;

mod embeddings;
mod heads;
mod json_floats;
mod pinecone_vectors;
mod proto_rows;
mod point_ids;
mod proto_struct;
mod py_floats;
mod qdrant_points;

#[pymodule]
fn vectordb_connector_speedups(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(embeddings::decode_base64_reply, m)?)?;
    m.add_function(wrap_pyfunction!(json_floats::encode_float32_rows, m)?)?;
    m.add_function(wrap_pyfunction!(py_floats::float32_from_numbers, m)?)?;
    m.add_function(wrap_pyfunction!(proto_rows::frame_rows, m)?)?;
    m.add_function(wrap_pyfunction!(proto_struct::encode_struct, m)?)?;
    m.add_function(wrap_pyfunction!(point_ids::point_ids, m)?)?;
    m.add_function(wrap_pyfunction!(qdrant_points::qdrant_point_heads, m)?)?;
    m.add_function(wrap_pyfunction!(pinecone_vectors::pinecone_vector_parts, m)?)
}
