//! Encodes a metadata dict as a `google.protobuf.Struct` (Pinecone's gRPC metadata, Weaviate's
//! properties): most of the cost of a gRPC row with metadata when written in Python, a few
//! microseconds for three fields, where the vector's bytes cost a tenth of that.
//!
//! The bytes are `protowire.encode_struct`'s: entries sorted by key (UTF-8 byte order is code point
//! order, Python's order for str), each `{key=1, value=2 Value}`; a `Value` is null 1, number 2 (the
//! double), string 3, bool 4, struct 5, list 6. Exact `None`, `bool`, `int`, `float`, `str`, `dict`,
//! `list` and `tuple` are written here; any other value (numpy scalars and arrays, dates, dict
//! subclasses, ints beyond a double, text that is not UTF-8) is handed to `fallback`, the Python
//! `encode_value`, whose bytes go in as they are, so the rules live in one place. A dict whose keys are
//! not all `str` goes whole to `fallback_struct`.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

struct Fallbacks<'a, 'py> {
    value: &'a Bound<'py, PyAny>,
    structure: &'a Bound<'py, PyAny>,
}

/// Nesting written here at most; deeper values go to `fallback`, whose recursion Python bounds (a
/// recursion of ours without bound could overflow a thread's stack on hostile metadata).
const MAX_DEPTH: usize = 64;

fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value > 0x7f {
        out.push((value as u8 & 0x7f) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn put_len_field(out: &mut Vec<u8>, tag: u8, payload: &[u8]) {
    out.push(tag);
    put_varint(out, payload.len() as u64);
    out.extend_from_slice(payload);
}

fn called(fallback: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    Ok(fallback.call1((value,))?.downcast_into::<PyBytes>()?.as_bytes().to_vec())
}

/// A `Value` (its fields, not a length-delimited wrapper) into `out`.
fn put_value(out: &mut Vec<u8>, value: &Bound<'_, PyAny>, fall: &Fallbacks, depth: usize) -> PyResult<()> {
    if depth > MAX_DEPTH {
        out.extend(called(fall.value, value)?);
    } else if value.is_none() {
        out.extend_from_slice(b"\x08\x00");
    } else if value.is_exact_instance_of::<PyBool>() {
        out.extend_from_slice(if value.is_truthy()? { b"\x20\x01" } else { b"\x20\x00" });
    } else if value.is_exact_instance_of::<PyFloat>() {
        out.push(0x11);
        out.extend_from_slice(&value.extract::<f64>()?.to_le_bytes());
    } else if value.is_exact_instance_of::<PyInt>() {
        match value.extract::<i64>() {
            // every i64 converts to the double float() makes of it (round to nearest, ties to even)
            Ok(number) => {
                out.push(0x11);
                out.extend_from_slice(&(number as f64).to_le_bytes());
            }
            Err(_) => out.extend(called(fall.value, value)?), // beyond i64: float() decides, or raises
        }
    } else if let Ok(text) = value.downcast_exact::<PyString>() {
        match text.to_str() {
            Ok(text) => put_len_field(out, 0x1a, text.as_bytes()),
            Err(_) => out.extend(called(fall.value, value)?), // a lone surrogate: str.encode raises
        }
    } else if let Ok(dict) = value.downcast_exact::<PyDict>() {
        let mut fields = Vec::new();
        put_struct(&mut fields, dict, fall, depth + 1)?;
        put_len_field(out, 0x2a, &fields);
    } else if value.is_exact_instance_of::<PyList>() || value.is_exact_instance_of::<PyTuple>() {
        let mut items = Vec::new();
        let mut item_bytes = Vec::new();
        for item in value.try_iter()? {
            item_bytes.clear();
            put_value(&mut item_bytes, &item?, fall, depth + 1)?;
            put_len_field(&mut items, 0x0a, &item_bytes); // ListValue.values = 1
        }
        put_len_field(out, 0x32, &items);
    } else {
        out.extend(called(fall.value, value)?);
    }
    Ok(())
}

/// A `Struct`'s fields into `out`: one `fields=1` map entry a key, sorted.
fn put_struct(out: &mut Vec<u8>, dict: &Bound<'_, PyDict>, fall: &Fallbacks, depth: usize) -> PyResult<()> {
    let mut entries: Vec<(String, Bound<'_, PyAny>)> = Vec::with_capacity(dict.len());
    for (name, value) in dict.iter() {
        let text = match name.downcast_exact::<PyString>().ok().map(|s| s.to_str()) {
            Some(Ok(text)) => text.to_owned(),
            _ => {
                // a key that is no str (or no UTF-8): Python's encode_struct says what happens
                out.extend(called(fall.structure, dict.as_any())?);
                return Ok(());
            }
        };
        entries.push((text, value));
    }
    entries.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    let mut entry = Vec::new();
    let mut value_bytes = Vec::new();
    for (name, value) in &entries {
        entry.clear();
        value_bytes.clear();
        put_len_field(&mut entry, 0x0a, name.as_bytes());
        put_value(&mut value_bytes, value, fall, depth)?;
        put_len_field(&mut entry, 0x12, &value_bytes);
        put_len_field(out, 0x0a, &entry);
    }
    Ok(())
}

/// A `google.protobuf.Struct` of a dict (its fields, as `protowire.encode_struct` writes them).
#[pyfunction]
pub fn encode_struct<'py>(
    py: Python<'py>,
    fields: &Bound<'py, PyDict>,
    fallback: &Bound<'py, PyAny>,
    fallback_struct: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyBytes>> {
    let mut out = Vec::new();
    put_struct(&mut out, fields, &Fallbacks { value: fallback, structure: fallback_struct }, 0)?;
    Ok(PyBytes::new(py, &out))
}
