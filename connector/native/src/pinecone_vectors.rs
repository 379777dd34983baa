//! The parts of each Pinecone `Vector` of a gRPC upsert around its values, for `proto_rows::frame_rows`:
//! the head, `Vector.id=1` (the id's text), and the tail, `Vector.metadata=3` (a
//! `google.protobuf.Struct`, entries in key order) when the row has metadata. In Python
//! (`backends.pinecone._python_parts`) the ids alone cost about a microsecond a row on a loaded 2-core
//! machine, most of the encoding once the vectors are framed natively.
//!
//! An id is its `str()`: an exact UTF-8 `str` as it is, an exact `int` within int64 as its decimal text.
//! Values are written by `proto_struct` in protobuf's dialect and the rows walked by `heads`; a row whose
//! id is of another kind (or text that is not UTF-8), or whose metadata `heads` does not write, is handed
//! whole to `row`, the Python writer of one row's parts, so the rules stay in one place.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyInt, PyList, PyString, PyTuple};

use crate::heads::{each_row, metadata_entries};
use crate::proto_struct::{put_len_field, Values, PROTOBUF};

/// The id's text as `str()` gives it, or `None` where Python writes the row.
fn id_text(id: &Bound<'_, PyAny>, digits: &mut String) -> Option<()> {
    digits.clear();
    if id.is_exact_instance_of::<PyInt>() {
        let number = id.extract::<i64>().ok()?; // beyond int64: Python's str() (and its digit limit)
        digits.push_str(&number.to_string());
    } else {
        digits.push_str(id.downcast_exact::<PyString>().ok()?.to_str().ok()?);
    }
    Some(())
}

/// Each row's head (`Vector.id=1`) and, where the batch has metadata, each row's tail (`Vector.metadata=3`
/// when the row's metadata is not empty, else nothing).
#[pyfunction]
#[pyo3(signature = (ids, metadata, row, value, structure))]
pub fn pinecone_vector_parts<'py>(
    py: Python<'py>,
    ids: &Bound<'py, PyList>,
    metadata: Option<&Bound<'py, PyList>>,
    row: &Bound<'py, PyAny>,
    value: &Bound<'py, PyAny>,
    structure: &Bound<'py, PyAny>,
) -> PyResult<(Bound<'py, PyList>, Option<Bound<'py, PyList>>)> {
    let values = Values { dialect: &PROTOBUF, value, structure };
    let heads = PyList::empty(py);
    let tails = metadata.map(|_| PyList::empty(py));
    let empty = PyBytes::new(py, b"");
    let mut text = String::new();
    let mut head = Vec::new();
    let mut fields = Vec::new();
    let mut tail = Vec::new();
    each_row(ids, metadata, |id, meta| {
        let entries = match id_text(id, &mut text) {
            Some(()) => metadata_entries(meta)?,
            None => None,
        };
        let Some(entries) = entries else {
            let parts = row.call1((id, meta))?.downcast_into::<PyTuple>()?;
            heads.append(parts.get_item(0)?)?;
            if let Some(tails) = &tails {
                tails.append(parts.get_item(1)?)?;
            }
            return Ok(());
        };
        head.clear();
        put_len_field(&mut head, 0x0a, text.as_bytes()); // Vector.id = 1
        heads.append(PyBytes::new(py, &head))?;
        let Some(tails) = &tails else { return Ok(()) };
        if entries.is_empty() {
            return tails.append(&empty);
        }
        fields.clear();
        values.put_entries(&mut fields, 0x0a, entries, 0)?; // Struct.fields = 1
        tail.clear();
        put_len_field(&mut tail, 0x1a, &fields); // Vector.metadata = 3
        tails.append(PyBytes::new(py, &tail))
    })?;
    Ok((heads, tails))
}
