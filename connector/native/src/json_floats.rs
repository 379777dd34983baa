//! Writes the rows of a float32 matrix as JSON arrays, with Python's lock released: formatting the
//! floats of a REST body is most of a REST client's CPU (about 27 ns a float through orjson, 41 µs of a
//! 1536-d row), and released it runs beside the threads that send the bodies already made.
//!
//! Each float is zmij's shortest text that parses back to the same float32 (`1.0`, `-0.0`, `1e-45`,
//! `3.4028235e+38`, `0.00001`, `1e+16`): the algorithm and the text orjson writes for a numpy float32,
//! so a body is the same bytes whichever of the two wrote its vectors (the Python path, `jsonvec`,
//! makes the one exception below too). Checked for all 2^32 bit patterns: every shortest text parses
//! back to its float32, directly and through a double (as many JSON parsers read numbers; serde_json
//! reads an f32 so unless built with `float_roundtrip`), except ±7.038531e-26 (bits 0x15ae43fd), which
//! through a double rounds twice, to the next float32 up; it is written `7.0385307e-26`, which reads
//! back exactly either way.
//!
//! JSON has no NaN or infinity; orjson would write `null` for them, which a server would take as a
//! missing value or refuse with a message about something else, so they are refused here, naming
//! where they are.

use pyo3::buffer::PyBuffer;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};

/// Room for one float and the comma after it: zmij may write all 24 bytes of its buffer
/// (`zmij::Buffer`) where a float goes, though the text it leaves is at most 17 (`-0.0000012345678`
/// with a ninth digit). With 25 a float, every write stays inside the row's reserve.
const FLOAT_ROOM: usize = 25;

/// The magnitude bits of the one float32 whose shortest text a double parser reads as another, and the
/// text written for it instead (the sign goes before it).
const DOUBLE_ROUNDED_BITS: u32 = 0x15ae_43fd;
const DOUBLE_ROUNDED_TEXT: &[u8] = b"7.0385307e-26";

/// Where the first NaN or infinity is.
struct NonFinite {
    row: usize,
    column: usize,
    value: f32,
}

/// Writes rows `0..rows` of `values` (`dim` floats a row) into `out`, each as `[x,y,...]`, and the
/// end of each row's text into `ends`.
fn write_rows(
    values: &[f32],
    rows: usize,
    dim: usize,
    out: &mut Vec<u8>,
    ends: &mut Vec<usize>,
) -> Result<(), NonFinite> {
    ends.reserve(rows);
    out.reserve(rows * (dim * FLOAT_ROOM + 2)); // once: the rows' own reserves below find room
    for row in 0..rows {
        let floats = &values[row * dim..(row + 1) * dim];
        if let Some(column) = floats.iter().position(|x| !x.is_finite()) {
            return Err(NonFinite { row, column, value: floats[column] });
        }
        out.reserve(dim * FLOAT_ROOM + 2);
        // SAFETY: the reserve leaves room for `[`, then for each float a zmij::Buffer (24 bytes,
        // alignment 1) where its text goes and the comma or `]` after it; every byte is written
        // before the length covers it.
        unsafe {
            let base = out.as_mut_ptr();
            let mut len = out.len();
            *base.add(len) = b'[';
            len += 1;
            for &value in floats {
                if value.to_bits() & 0x7fff_ffff == DOUBLE_ROUNDED_BITS {
                    len += write_double_rounded(value, base.add(len));
                } else {
                    let text = &mut *base.add(len).cast::<zmij::Buffer>();
                    len += text.format_finite(value).len();
                }
                *base.add(len) = b',';
                len += 1;
            }
            if dim == 0 {
                len += 1; // no float, no comma: the `]` goes right after the `[`
            }
            *base.add(len - 1) = b']';
            out.set_len(len);
        }
        ends.push(out.len());
    }
    Ok(())
}

/// Writes `DOUBLE_ROUNDED_TEXT` with `value`'s sign at `to`; returns its length (at most 14).
///
/// # Safety
/// `to` must have room for 14 bytes.
unsafe fn write_double_rounded(value: f32, to: *mut u8) -> usize {
    let sign = usize::from(value.is_sign_negative());
    if sign == 1 {
        *to = b'-';
    }
    std::ptr::copy_nonoverlapping(DOUBLE_ROUNDED_TEXT.as_ptr(), to.add(sign), DOUBLE_ROUNDED_TEXT.len());
    sign + DOUBLE_ROUNDED_TEXT.len()
}

/// Each row of a C-contiguous `(n, d)` float32 matrix as the bytes of its JSON array.
#[pyfunction]
pub fn encode_float32_rows<'py>(py: Python<'py>, matrix: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
    let buffer = PyBuffer::<f32>::get(matrix)?; // refuses other item types and unaligned buffers
    if buffer.dimensions() != 2 || !buffer.is_c_contiguous() {
        return Err(PyValueError::new_err("expected a C-contiguous (n, d) float32 matrix"));
    }
    let (rows, dim) = (buffer.shape()[0], buffer.shape()[1]);
    let values: &[f32] = if rows * dim == 0 {
        &[]
    } else {
        // SAFETY: the buffer is exported (so kept alive and unresized) until `buffer` drops, holds
        // rows * dim aligned float32s (checked by PyBuffer::get and above), and the caller does not
        // write to the matrix while it is encoded (a batch's matrix is never written once made).
        unsafe { std::slice::from_raw_parts(buffer.buf_ptr() as *const f32, rows * dim) }
    };
    let (mut out, mut ends) = (Vec::new(), Vec::new());
    py.allow_threads(|| write_rows(values, rows, dim, &mut out, &mut ends)).map_err(|at| {
        PyValueError::new_err(format!(
            "row {} column {} is {}: JSON has no such number",
            at.row, at.column, at.value
        ))
    })?;
    let mut start = 0;
    let texts = ends.iter().map(|&end| {
        let text = PyBytes::new(py, &out[start..end]);
        start = end;
        text
    });
    PyList::new(py, texts)
}
