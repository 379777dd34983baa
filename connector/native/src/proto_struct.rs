//! Encodes metadata as a protobuf `Value` tree: a dict as a `google.protobuf.Struct` (Pinecone's gRPC
//! metadata, Weaviate's properties), and the values of a Qdrant point's payload as `qdrant.Value`s
//! (`qdrant_points`). Written in Python this is most of the cost of a gRPC row with metadata, a few
//! microseconds for three fields, where the vector's bytes cost a tenth of that.
//!
//! The two `Value` messages have the same shape under other field numbers (a `Dialect`): protobuf's is
//! null 1, number 2 (the double), string 3, bool 4, struct 5, list 6; Qdrant's is null 1, double 2,
//! integer 3 (int64), string 4, bool 5, struct 6, list 7, and writes an int within int64 as an integer
//! where protobuf's writes its double. A struct's entries are sorted by key (UTF-8 byte order is code
//! point order, Python's order for str), each `{key=1, value=2 Value}`. The bytes are those of the
//! Python encoders (`protowire.encode_value`/`encode_struct`, `backends.qdrant._value`): exact `None`,
//! `bool`, `int`, `float`, `str`, `dict`, `list` and `tuple` are written here; any other value (numpy
//! scalars and arrays, dates, dict subclasses, ints beyond what the dialect writes natively, text that
//! is not UTF-8) is handed to the `value` fallback, the Python encoder, whose bytes go in as they are,
//! so the rules live in one place. A dict whose keys are not all `str` goes whole to `structure`, the
//! Python writer of a struct's fields.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

/// The tags (field number and wire type, one byte each) of a `Value` message's members.
pub struct Dialect {
    null: u8,
    double: u8,
    integer: Option<u8>, // None: every number is its double
    string: u8,
    boolean: u8,
    structure: u8,
    list: u8,
}

/// `google.protobuf.Value`.
pub const PROTOBUF: Dialect =
    Dialect { null: 0x08, double: 0x11, integer: None, string: 0x1a, boolean: 0x20, structure: 0x2a, list: 0x32 };

/// `qdrant.Value` (json_with_int.proto).
pub const QDRANT: Dialect = Dialect {
    null: 0x08,
    double: 0x11,
    integer: Some(0x18),
    string: 0x22,
    boolean: 0x28,
    structure: 0x32,
    list: 0x3a,
};

/// A dialect and the Python encoders of what is not written here.
pub struct Values<'a, 'py> {
    pub dialect: &'a Dialect,
    pub value: &'a Bound<'py, PyAny>,     // a value's Value message (its fields)
    pub structure: &'a Bound<'py, PyAny>, // a dict's struct fields
}

/// Nesting written here at most; deeper values go to `fallback`, whose recursion Python bounds (a
/// recursion of ours without bound could overflow a thread's stack on hostile metadata).
const MAX_DEPTH: usize = 64;

pub fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value > 0x7f {
        out.push((value as u8 & 0x7f) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

pub fn put_len_field(out: &mut Vec<u8>, tag: u8, payload: &[u8]) {
    out.push(tag);
    put_varint(out, payload.len() as u64);
    out.extend_from_slice(payload);
}

fn called(fallback: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    Ok(fallback.call1((value,))?.downcast_into::<PyBytes>()?.as_bytes().to_vec())
}

impl Values<'_, '_> {
    /// A `Value` (its fields, not a length-delimited wrapper) into `out`.
    pub fn put_value(&self, out: &mut Vec<u8>, value: &Bound<'_, PyAny>, depth: usize) -> PyResult<()> {
        let tags = self.dialect;
        if depth > MAX_DEPTH {
            out.extend(called(self.value, value)?);
        } else if value.is_none() {
            out.extend_from_slice(&[tags.null, 0]);
        } else if value.is_exact_instance_of::<PyBool>() {
            out.extend_from_slice(&[tags.boolean, u8::from(value.is_truthy()?)]);
        } else if value.is_exact_instance_of::<PyFloat>() {
            out.push(tags.double);
            out.extend_from_slice(&value.extract::<f64>()?.to_le_bytes());
        } else if value.is_exact_instance_of::<PyInt>() {
            match (value.extract::<i64>(), tags.integer) {
                (Ok(number), Some(tag)) => {
                    out.push(tag);
                    put_varint(out, number as u64); // a negative int64 takes ten bytes, as protobuf's
                }
                // every i64 converts to the double float() makes of it (round to nearest, ties to even)
                (Ok(number), None) => {
                    out.push(tags.double);
                    out.extend_from_slice(&(number as f64).to_le_bytes());
                }
                (Err(_), _) => out.extend(called(self.value, value)?), // beyond i64: Python decides, or raises
            }
        } else if let Ok(text) = value.downcast_exact::<PyString>() {
            match text.to_str() {
                Ok(text) => put_len_field(out, tags.string, text.as_bytes()),
                Err(_) => out.extend(called(self.value, value)?), // a lone surrogate: str.encode raises
            }
        } else if let Ok(dict) = value.downcast_exact::<PyDict>() {
            let mut fields = Vec::new();
            match entries(dict)? {
                Some(entries) => self.put_entries(&mut fields, 0x0a, entries, depth + 1)?, // Struct.fields = 1
                // a key that is no str (or no UTF-8): the Python writer says what happens
                None => fields.extend(called(self.structure, dict.as_any())?),
            }
            put_len_field(out, tags.structure, &fields);
        } else if value.is_exact_instance_of::<PyList>() || value.is_exact_instance_of::<PyTuple>() {
            let mut items = Vec::new();
            let mut item_bytes = Vec::new();
            for item in value.try_iter()? {
                item_bytes.clear();
                self.put_value(&mut item_bytes, &item?, depth + 1)?;
                put_len_field(&mut items, 0x0a, &item_bytes); // ListValue.values = 1
            }
            put_len_field(out, tags.list, &items);
        } else {
            out.extend(called(self.value, value)?);
        }
        Ok(())
    }

    /// Map entries `{key=1, value=2 Value}` into `out`, each as field `tag` (length-delimited), sorted by key.
    pub fn put_entries(
        &self,
        out: &mut Vec<u8>,
        tag: u8,
        mut entries: Entries<'_>,
        depth: usize,
    ) -> PyResult<()> {
        entries.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        let mut entry = Vec::new();
        let mut value_bytes = Vec::new();
        for (name, value) in &entries {
            entry.clear();
            value_bytes.clear();
            put_len_field(&mut entry, 0x0a, name.as_bytes());
            self.put_value(&mut value_bytes, value, depth)?;
            put_len_field(&mut entry, 0x12, &value_bytes);
            put_len_field(out, tag, &entry);
        }
        Ok(())
    }
}

/// A struct's or payload's items: each key's UTF-8 text and its value.
pub type Entries<'py> = Vec<(String, Bound<'py, PyAny>)>;

/// A dict's items with their keys as UTF-8 text; `None` if a key is no exact `str` or no UTF-8.
pub fn entries<'py>(dict: &Bound<'py, PyDict>) -> PyResult<Option<Entries<'py>>> {
    let mut out = Vec::with_capacity(dict.len());
    for (name, value) in dict.iter() {
        match name.downcast_exact::<PyString>().ok().map(|s| s.to_str()) {
            Some(Ok(text)) => out.push((text.to_owned(), value)),
            _ => return Ok(None),
        }
    }
    Ok(Some(out))
}

/// A `google.protobuf.Struct` of a dict (its fields, as `protowire.encode_struct` writes them).
#[pyfunction]
pub fn encode_struct<'py>(
    py: Python<'py>,
    fields: &Bound<'py, PyDict>,
    fallback: &Bound<'py, PyAny>,
    fallback_struct: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyBytes>> {
    let values = Values { dialect: &PROTOBUF, value: fallback, structure: fallback_struct };
    let mut out = Vec::new();
    match entries(fields)? {
        Some(entries) => values.put_entries(&mut out, 0x0a, entries, 0)?,
        None => out.extend(called(fallback_struct, fields.as_any())?),
    }
    Ok(PyBytes::new(py, &out))
}
