//! Decodes an OpenAI embeddings reply whose vectors are base64 into the float32 bytes of its rows,
//! with Python's lock released: the JSON parse and the base64 decoding are most of an embedding
//! client's CPU, and released they run on as many cores as there are replies to decode.
//!
//! Anything that is not exactly a reply to `count` inputs (a float reply, a missing or repeated
//! index, vectors of unequal lengths, bad base64) gives `None`: the caller's own decoder then
//! decodes it or says what is wrong, so the rules and the messages live in one place.
//!
//! The reply's `model` comes back with the rows: a gateway that falls back to another model of the
//! same length (LiteLLM, Portkey) names it there, and the caller refuses vectors of two models in one
//! write. A `model` that is not a string is none, and of a repeated one the last counts, as in the
//! caller's decoder (msgspec).

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use base64::Engine as _;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;

// Objects only: serde's derived structs would also take a JSON array of their fields in order, which
// the Python decoder refuses, and the two must agree on what a reply is.

struct Reply<'a> {
    data: Vec<Item<'a>>,
    model: Option<String>,
}

struct Item<'a> {
    index: usize,
    embedding: Cow<'a, str>, // borrowed unless the JSON string holds escapes ("\/")
}

#[derive(Deserialize)]
struct Text<'a>(#[serde(borrow)] Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Reply<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ReplyVisitor<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for ReplyVisitor<'a> {
            type Value = Reply<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an embeddings list object")
            }
            fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Reply<'a>, M::Error> {
                let (mut data, mut model) = (None, None);
                while let Some(key) = map.next_key::<Text<'de>>()? {
                    match key.0.as_ref() {
                        "data" if data.is_some() => return Err(de::Error::duplicate_field("data")),
                        "data" => data = Some(map.next_value::<Vec<Item<'a>>>()?),
                        "model" => {
                            model = match map.next_value::<serde_json::Value>()? {
                                serde_json::Value::String(name) => Some(name),
                                _ => None,
                            }
                        }
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(Reply {
                    data: data.ok_or_else(|| de::Error::missing_field("data"))?,
                    model,
                })
            }
        }
        deserializer.deserialize_map(ReplyVisitor(PhantomData))
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Item<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ItemVisitor<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for ItemVisitor<'a> {
            type Value = Item<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an embedding object")
            }
            fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Item<'a>, M::Error> {
                let (mut index, mut embedding) = (None, None);
                while let Some(key) = map.next_key::<Text<'de>>()? {
                    match key.0.as_ref() {
                        "index" if index.is_none() => index = Some(map.next_value::<usize>()?),
                        "embedding" if embedding.is_none() => embedding = Some(map.next_value::<Text<'a>>()?.0),
                        "index" | "embedding" => return Err(de::Error::custom("a repeated key")),
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(Item {
                    index: index.ok_or_else(|| de::Error::missing_field("index"))?,
                    embedding: embedding.ok_or_else(|| de::Error::missing_field("embedding"))?,
                })
            }
        }
        deserializer.deserialize_map(ItemVisitor(PhantomData))
    }
}

/// The base64 vectors of a reply to `count` inputs in input order, the bytes a row decodes to, and the
/// model the reply names.
fn parse(body: &[u8], count: usize) -> Option<(Vec<Cow<'_, str>>, usize, Option<String>)> {
    let reply: Reply = serde_json::from_slice(body).ok()?;
    if reply.data.len() != count || count == 0 {
        return None;
    }
    let mut by_index: Vec<Option<Cow<str>>> = vec![None; count];
    for item in reply.data {
        let slot = by_index.get_mut(item.index)?;
        if slot.is_some() {
            return None;
        }
        *slot = Some(item.embedding);
    }
    let texts: Vec<Cow<str>> = by_index.into_iter().collect::<Option<_>>()?;
    let row = decoded_len(texts[0].as_bytes())?;
    Some((texts, row, reply.model))
}

/// The bytes a padded base64 text decodes to, if its length is a whole number of quads.
fn decoded_len(text: &[u8]) -> Option<usize> {
    if text.len() % 4 != 0 {
        return None;
    }
    let padding = text.iter().rev().take(2).take_while(|&&c| c == b'=').count();
    (text.len() / 4 * 3).checked_sub(padding)
}

/// Decodes every text into its row of `out` (`row` bytes each); false if any is not exactly that.
fn decode_rows(texts: &[Cow<str>], row: usize, out: &mut [u8]) -> bool {
    let engine = base64::engine::general_purpose::STANDARD;
    out.chunks_mut(row).zip(texts).all(|(dest, text)| {
        decoded_len(text.as_bytes()) == Some(row)
            && matches!(engine.decode_slice(text.as_bytes(), dest), Ok(n) if n == row)
    })
}

/// The float32 bytes of a reply to `count` inputs, row `i` for input `i`, and the model the reply names
/// (`None`: none, or not a string); or None.
#[pyfunction]
pub fn decode_base64_reply<'py>(
    py: Python<'py>,
    body: &[u8],
    count: usize,
) -> Option<(Bound<'py, PyBytes>, Option<String>)> {
    let (texts, row, model) = py.allow_threads(|| parse(body, count))?;
    if row == 0 || row % 4 != 0 {
        return None;
    }
    let mut decoded = true;
    // the bytes object is made at its final size and filled with the lock released: nothing else
    // can see it until it is returned
    let rows = PyBytes::new_with(py, row * count, |out| {
        decoded = py.allow_threads(|| decode_rows(&texts, row, out));
        Ok(())
    })
    .ok()?;
    decoded.then_some((rows, model))
}
