//! Reads a list or tuple of Python numbers (a dict row's vector, a Beam `Chunk`'s or `Row`'s
//! embedding) as the bytes of one float32 buffer. Python's lock stays held: the items are Python
//! objects. In Python the fastest way is `struct.pack("<768f", *values)`, about 11 µs a 768-d row here,
//! most of it spent on the call's argument tuple and one C call per item; this reads the list's items
//! where they are.
//!
//! The rule is `struct`'s: each item is the double `PyFloat_AsDouble` makes of it (a float or a float
//! subclass such as numpy's float64, an int that is no bool, anything with `__float__` or `__index__`),
//! rounded to the nearest float32 as C's cast rounds it (ties to even, NaN keeping its sign). An item
//! it cannot read, a bool (Python's or numpy's), or a finite double beyond the largest float32 (which
//! `struct` refuses), gives `None`: the caller's Python path then decides (it refuses strings, bools
//! and `None` items, and makes the overflow an infinity), so what a row may hold is said in one place.

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::{PyBytes, PyDict};

/// numpy's bool type (`np.bool_`), looked up once numpy is imported: a numpy bool has `__float__`, so
/// it would read as 1.0 or 0.0, but it is a flag as Python's bool is.
static NUMPY_BOOL: GILOnceCell<Py<PyAny>> = GILOnceCell::new();

/// The type object of `np.bool_`, or null while numpy is not in `sys.modules` (then no item is one;
/// looked up again on the next call, since numpy may be imported later).
fn numpy_bool(py: Python<'_>) -> *mut ffi::PyTypeObject {
    if let Some(found) = NUMPY_BOOL.get(py) {
        return found.as_ptr().cast();
    }
    let lookup = || -> PyResult<Option<Py<PyAny>>> {
        let modules = py.import("sys")?.getattr("modules")?;
        let Some(numpy) = modules.downcast::<PyDict>()?.get_item("numpy")? else {
            return Ok(None);
        };
        Ok(Some(numpy.getattr("bool_")?.unbind()))
    };
    match lookup() {
        Ok(Some(found)) => NUMPY_BOOL.get_or_init(py, || found).as_ptr().cast(),
        Ok(None) => std::ptr::null_mut(),
        Err(_) => std::ptr::null_mut(), // a numpy without bool_: no item is one
    }
}

/// One item as a float32, or `None` where `struct` would refuse it (and for numpy's bool,
/// `numpy_bool`, null where numpy is not imported).
///
/// # Safety
/// `item` must be a live object; the lock must be held.
unsafe fn item_float32(item: *mut ffi::PyObject, numpy_bool: *mut ffi::PyTypeObject) -> Option<f32> {
    let double = if ffi::Py_TYPE(item) == std::ptr::addr_of_mut!(ffi::PyFloat_Type) {
        ffi::PyFloat_AsDouble(item) // runs no Python code
    } else if ffi::PyBool_Check(item) != 0 || ffi::Py_TYPE(item) == numpy_bool {
        return None; // True is no 1.0: a vector of flags is refused by the caller, not stored as numbers
    } else {
        // `__float__` may run Python code that drops the list's reference to the item: hold one
        ffi::Py_IncRef(item);
        let double = ffi::PyFloat_AsDouble(item);
        ffi::Py_DecRef(item);
        if double == -1.0 && !ffi::PyErr_Occurred().is_null() {
            ffi::PyErr_Clear();
            return None;
        }
        double
    };
    let single = double as f32; // nearest float32, as C's cast (and numpy's) rounds
    if single.is_infinite() && double.is_finite() {
        return None;
    }
    Some(single)
}

/// The float32 bytes (native byte order) of a list or tuple of numbers, or `None`.
#[pyfunction]
pub fn float32_from_numbers<'py>(py: Python<'py>, values: &Bound<'py, PyAny>) -> Option<Bound<'py, PyBytes>> {
    let seq = values.as_ptr();
    // SAFETY: `seq` is a live object (borrowed for the call) and the lock is held throughout.
    let (is_list, len) = unsafe {
        if ffi::PyList_CheckExact(seq) != 0 {
            (true, ffi::PyList_Size(seq))
        } else if ffi::PyTuple_CheckExact(seq) != 0 {
            (false, ffi::PyTuple_Size(seq))
        } else {
            return None;
        }
    };
    let len = usize::try_from(len).ok()?;
    let numpy_bool = numpy_bool(py);
    let mut read = true;
    let bytes = PyBytes::new_with(py, len * 4, |out| {
        for (i, dest) in out.chunks_exact_mut(4).enumerate() {
            // SAFETY: the lock is held; GetItem checks the index, so a list that an item's
            // `__float__` shortened gives NULL (an IndexError, cleared) instead of a stale item.
            let value = unsafe {
                let index = i as ffi::Py_ssize_t;
                let item = if is_list { ffi::PyList_GetItem(seq, index) } else { ffi::PyTuple_GetItem(seq, index) };
                if item.is_null() {
                    ffi::PyErr_Clear();
                    None
                } else {
                    item_float32(item, numpy_bool)
                }
            };
            match value {
                Some(value) => dest.copy_from_slice(&value.to_ne_bytes()),
                None => {
                    read = false;
                    break;
                }
            }
        }
        Ok(())
    })
    .ok()?;
    read.then_some(bytes)
}
