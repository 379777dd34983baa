//! What the native writers of rows' heads share (`qdrant_points`, `pinecone_vectors`): the walk over a
//! batch's ids and metadata, a row's metadata as entries, and the rule that a row they cannot write
//! exactly goes whole to its Python writer, so each rule stays in one place.
//!
//! Metadata is written here when it is absent (no list, or `None`) or an exact `dict` whose keys are all
//! exact UTF-8 `str`s; any other metadata (a `Mapping` of another type, keys of other types) sends the
//! row to Python.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::proto_struct::{entries, Entries};

/// `write(id, metadata)` for each row of a batch: `metadata` is `None` where the batch has no list of
/// metadata, else the row's item (which may be Python's `None`).
pub fn each_row<'py>(
    ids: &Bound<'py, PyList>,
    metadata: Option<&Bound<'py, PyList>>,
    mut write: impl FnMut(&Bound<'py, PyAny>, Option<&Bound<'py, PyAny>>) -> PyResult<()>,
) -> PyResult<()> {
    if metadata.is_some_and(|m| m.len() != ids.len()) {
        return Err(PyValueError::new_err("one metadata entry (or None) an id"));
    }
    for (i, id) in ids.iter().enumerate() {
        let meta = metadata.map(|m| m.get_item(i)).transpose()?;
        write(&id, meta.as_ref())?;
    }
    Ok(())
}

/// A row's metadata as entries (none when absent or `None`); `None` where Python writes the row.
pub fn metadata_entries<'py>(metadata: Option<&Bound<'py, PyAny>>) -> PyResult<Option<Entries<'py>>> {
    match metadata {
        None => Ok(Some(Vec::new())),
        Some(m) if m.is_none() => Ok(Some(Vec::new())),
        Some(m) => match m.downcast_exact::<PyDict>() {
            Ok(dict) => entries(dict),
            Err(_) => Ok(None),
        },
    }
}
