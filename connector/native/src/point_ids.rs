//! Point ids by `connector.ids`' rule (Qdrant's, and Weaviate's UUIDs): an unsigned 64-bit integer stays
//! an integer; a UUID, hyphenated or as 32 hex digits in any case, is its canonical text (lower case,
//! `8-4-4-4-12`); any other text is the UUIDv5 of its UTF-8 bytes in `ID_NAMESPACE`. In Python the
//! UUIDv5 is about a microsecond an id (a regex, `hashlib`, the hex text), as much as the rest of a
//! Qdrant gRPC row's encoding.
//!
//! Only exact `int` and `str` ids are mapped here; `point_ids` hands any other (bools, numpy integers,
//! `uuid.UUID`, negative ints, text that is not UTF-8) to the Python `point_id`, which keeps the rule.

use pyo3::prelude::*;
use pyo3::types::{PyInt, PyList, PyString};
use sha1_smol::Sha1;

/// `connector.ids.ID_NAMESPACE` (5e85dbc1-191f-4ec4-9f59-dc30e8685b42): fixed for good, since every
/// converted id already written is a UUID in it.
const ID_NAMESPACE: [u8; 16] = [
    0x5e, 0x85, 0xdb, 0xc1, 0x19, 0x1f, 0x4e, 0xc4, 0x9f, 0x59, 0xdc, 0x30, 0xe8, 0x68, 0x5b, 0x42,
];

/// The text of a UUID: 36 bytes of ASCII.
pub type UuidText = [u8; 36];

/// An id as Qdrant takes it.
pub enum PointId<'a> {
    Num(u64),
    Same(&'a str),     // a canonical UUID already: the id itself
    Respelt(UuidText), // a UUID in another spelling (upper case, no hyphens): its canonical text
    Uuid(UuidText),    // any other id's UUIDv5
}

impl PointId<'_> {
    /// Whether the id is its own point id (no original to keep beside it): `ids.converted`'s rule, as
    /// a UUID in any spelling is the id itself.
    pub fn kept(&self) -> bool {
        !matches!(self, PointId::Uuid(_))
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

fn uuid_text(bytes: &[u8; 16]) -> UuidText {
    let mut out = [b'-'; 36];
    let mut pos = 0;
    for (i, byte) in bytes.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            pos += 1; // the hyphen
        }
        out[pos] = HEX[usize::from(byte >> 4)];
        out[pos + 1] = HEX[usize::from(byte & 0xf)];
        pos += 2;
    }
    out
}

/// `str(uuid.uuid5(ID_NAMESPACE, text))`.
pub fn uuid5(text: &str) -> UuidText {
    let mut sha = Sha1::new();
    sha.update(&ID_NAMESPACE);
    sha.update(text.as_bytes());
    let digest = sha.digest().bytes();
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    bytes[6] = (bytes[6] & 0x0f) | 0x50; // version 5
    bytes[8] = (bytes[8] & 0x3f) | 0x80; // RFC 4122 variant
    uuid_text(&bytes)
}

fn hex_value(digit: u8) -> Option<u8> {
    match digit {
        b'0'..=b'9' => Some(digit - b'0'),
        b'a'..=b'f' => Some(digit - b'a' + 10),
        b'A'..=b'F' => Some(digit - b'A' + 10),
        _ => None,
    }
}

/// A text id: itself if it is a canonical UUID, the canonical text of a UUID in another form (upper
/// case, no hyphens), else its UUIDv5 (`ids.canonical_uuid(text) or ids.uuid5_text(text)`).
pub fn text_id(text: &str) -> PointId<'_> {
    let raw = text.as_bytes();
    let digits: Vec<u8> = match raw.len() {
        36 if [8, 13, 18, 23].iter().all(|&i| raw[i] == b'-') => raw
            .iter()
            .enumerate()
            .filter(|(i, _)| !matches!(i, 8 | 13 | 18 | 23))
            .map(|(_, &b)| b)
            .collect(),
        32 => raw.to_vec(),
        _ => return PointId::Uuid(uuid5(text)),
    };
    let mut bytes = [0u8; 16];
    for (i, pair) in digits.chunks_exact(2).enumerate() {
        match (hex_value(pair[0]), hex_value(pair[1])) {
            (Some(high), Some(low)) => bytes[i] = high << 4 | low,
            _ => return PointId::Uuid(uuid5(text)),
        }
    }
    if raw.len() == 36 && !raw.iter().any(u8::is_ascii_uppercase) {
        PointId::Same(text)
    } else {
        PointId::Respelt(uuid_text(&bytes))
    }
}

/// An exact `int` or `str` id as Qdrant takes it; `None` for any other (Python's `point_id` decides).
pub fn point_id<'a>(id: &'a Bound<'_, PyAny>) -> Option<PointId<'a>> {
    if id.is_exact_instance_of::<PyInt>() {
        return id.extract::<u64>().ok().map(PointId::Num); // a negative or larger int: its text's UUID
    }
    let text = id.downcast_exact::<PyString>().ok()?.to_str().ok()?;
    Some(text_id(text))
}

/// `[ids.point_id(i) for i in ids]`: an id that stays is the same object, a converted one its UUID's text.
#[pyfunction]
pub fn point_ids<'py>(
    py: Python<'py>,
    ids: &Bound<'py, PyList>,
    fallback: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyList>> {
    let out = PyList::empty(py);
    for id in ids.iter() {
        match point_id(&id) {
            Some(PointId::Uuid(text) | PointId::Respelt(text)) => {
                // ASCII hex and hyphens: valid UTF-8
                out.append(PyString::new(py, std::str::from_utf8(&text).expect("ASCII")))?
            }
            Some(_) => out.append(&id)?,
            None => out.append(fallback.call1((&id,))?)?,
        }
    }
    Ok(out)
}
