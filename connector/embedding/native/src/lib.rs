//! Decodes an OpenAI embeddings reply whose vectors are base64 into the float32 bytes of its rows,
//! with Python's lock released: the JSON parse and the base64 decoding are most of an embedding
//! client's CPU, and released they run on as many cores as there are replies to decode.
//!
//! Anything that is not exactly a reply to `count` inputs (a float reply, a missing or repeated
//! index, vectors of unequal lengths, bad base64) gives `None`: the caller's own decoder then
//! decodes it or says what is wrong, so the rules and the messages live in one place.

use std::borrow::Cow;

use base64::Engine as _;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use serde::Deserialize;

#[derive(Deserialize)]
struct Reply<'a> {
    #[serde(borrow)]
    data: Vec<Item<'a>>,
}

#[derive(Deserialize)]
struct Item<'a> {
    index: usize,
    #[serde(borrow)]
    embedding: Cow<'a, str>, // borrowed unless the JSON string holds escapes ("\/")
}

fn decode(body: &[u8], count: usize) -> Option<Vec<u8>> {
    let reply: Reply = serde_json::from_slice(body).ok()?;
    if reply.data.len() != count || count == 0 {
        return None;
    }
    let mut by_index: Vec<Option<&str>> = vec![None; count];
    for item in &reply.data {
        let slot = by_index.get_mut(item.index)?;
        if slot.is_some() {
            return None;
        }
        *slot = Some(&item.embedding);
    }
    let engine = base64::engine::general_purpose::STANDARD;
    let mut out = Vec::new();
    let mut row_size = None;
    for text in by_index {
        let before = out.len();
        engine.decode_vec(text?.as_bytes(), &mut out).ok()?;
        let size = out.len() - before;
        if *row_size.get_or_insert(size) != size {
            return None;
        }
    }
    if row_size? % 4 != 0 {
        return None;
    }
    Some(out)
}

/// The float32 bytes of a reply to `count` inputs, row `i` for input `i`, or None.
#[pyfunction]
fn decode_base64_reply<'py>(py: Python<'py>, body: &[u8], count: usize) -> Option<Bound<'py, PyBytes>> {
    let rows = py.allow_threads(|| decode(body, count))?;
    Some(PyBytes::new(py, &rows))
}

#[pymodule]
fn vectordb_connector_native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(decode_base64_reply, m)?)
}
