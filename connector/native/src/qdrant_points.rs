//! The head of each Qdrant point of an upsert: `PointStruct.id=1 PointId{num=1 | uuid=2}` and the
//! payload, `PointStruct.payload=3 map<string, qdrant.Value>` (one entry a key, in key order), the part
//! of a point before its vectors. In Python (`backends.qdrant._python_heads`) it is about 5 µs a row
//! with a text id and one metadata field on a loaded 2-core machine (0.4 µs here), most of the client's
//! CPU on the gRPC path once the vectors are framed natively (`proto_rows`).
//!
//! A row's payload is its metadata, then the namespace under `namespace_key` (when given), then the
//! original id under `original_id_key` when the id became a UUIDv5 (`ids.converted`: not a UUID in
//! another spelling), each replacing a key of the same name. Ids are mapped by `point_ids`, values
//! written by `proto_struct` in Qdrant's dialect, the rows walked by `heads`. A row whose id is no
//! exact `int` within uint64 or UTF-8 `str`, or whose metadata `heads` does not write (neither `None`
//! nor an exact `dict` with exact UTF-8 `str` keys), is handed whole to `row`, the Python writer of a
//! head, so the rules stay in one place.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString};

use crate::heads::{each_row, metadata_entries};
use crate::point_ids::{point_id, PointId};
use crate::proto_struct::{put_len_field, put_varint, Entries, Values, QDRANT};

/// The payload's entries of one row, or `None` where Python writes the row.
fn payload<'py>(
    id: &Bound<'py, PyAny>,
    kept: bool,
    metadata: Option<&Bound<'py, PyAny>>,
    namespace: Option<(&str, &Bound<'py, PyAny>)>,
    original_id_key: &str,
) -> PyResult<Option<Entries<'py>>> {
    let Some(mut out) = metadata_entries(metadata)? else {
        return Ok(None);
    };
    let mut set = |name: &str, value: &Bound<'py, PyAny>| {
        out.retain(|(key, _)| key != name);
        out.push((name.to_owned(), value.clone()));
    };
    if let Some((name, value)) = namespace {
        set(name, value);
    }
    if !kept {
        set(original_id_key, id);
    }
    Ok(Some(out))
}

/// Each row's head: `PointStruct` fields 1 (id) and 3 (payload), as bytes.
#[pyfunction]
#[pyo3(signature = (ids, metadata, namespace_key, namespace, original_id_key, row, value, structure))]
#[allow(clippy::too_many_arguments)]
pub fn qdrant_point_heads<'py>(
    py: Python<'py>,
    ids: &Bound<'py, PyList>,
    metadata: Option<&Bound<'py, PyList>>,
    namespace_key: &str,
    namespace: Option<&Bound<'py, PyString>>,
    original_id_key: &str,
    row: &Bound<'py, PyAny>,
    value: &Bound<'py, PyAny>,
    structure: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyList>> {
    let values = Values { dialect: &QDRANT, value, structure };
    let namespace = namespace.map(|n| (namespace_key, n.as_any()));
    let out = PyList::empty(py);
    let mut head = Vec::new();
    let mut id_body = Vec::new();
    each_row(ids, metadata, |id, meta| {
        let mapped = point_id(id);
        let entries = match &mapped {
            Some(pid) => payload(id, pid.kept(), meta, namespace, original_id_key)?,
            None => None,
        };
        let (Some(pid), Some(entries)) = (mapped, entries) else {
            return out.append(row.call1((id, meta))?);
        };
        id_body.clear();
        match pid {
            PointId::Num(num) => {
                id_body.push(0x08); // num = 1; 0 too: a set oneof member is on the wire
                put_varint(&mut id_body, num);
            }
            PointId::Same(text) => put_len_field(&mut id_body, 0x12, text.as_bytes()), // uuid = 2
            PointId::Respelt(text) | PointId::Uuid(text) => put_len_field(&mut id_body, 0x12, &text),
        }
        head.clear();
        put_len_field(&mut head, 0x0a, &id_body); // PointStruct.id = 1
        values.put_entries(&mut head, 0x1a, entries, 0)?; // PointStruct.payload = 3
        out.append(PyBytes::new(py, &head))
    })?;
    Ok(out)
}
