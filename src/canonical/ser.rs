//! NENRIN canonical bytes straight from a `Serialize` type, without building a
//! `serde_json::Value` tree first (building that tree was the largest cost of finishing a walk:
//! BENCHMARKS.md note 1).
//!
//! The writer streams: it cannot reorder what it has already written, so it only accepts
//! objects whose keys arrive in canonical (code point) order. The wire types declare their
//! fields in that order and `serde_json::Map` iterates in it; anything else makes the writer
//! stop with [`NotStreamable`], and [`to_bytes_of`] then takes the general path
//! (`serde_json::to_value` and [`super::to_bytes`]). Either way the bytes are the same.

use super::{write_number_text, write_string};
use serde::ser::{self, Impossible, Serialize};
use std::fmt::{self, Write as _};

/// serde_json's `arbitrary_precision` numbers serialise as a one-field struct with this name,
/// the field holding the number's exact text.
const NUMBER_TOKEN: &str = "$serde_json::private::Number";
/// serde_json's `RawValue` uses the same trick; its text is not canonical, so it is refused.
const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

/// Canonical bytes of any serialisable value: streamed when possible, otherwise through a
/// `serde_json::Value`. Panics only if serde_json itself cannot represent the value (a map
/// with non-string keys, say), which no wire type has.
pub fn to_bytes_of<T: Serialize + ?Sized>(value: &T) -> Vec<u8> {
    match try_stream(value) {
        Ok(bytes) => bytes,
        Err(NotStreamable(_)) => {
            let tree = serde_json::to_value(value).expect("value serialises to JSON");
            super::to_bytes(&tree)
        }
    }
}

/// The streaming path alone; `Err` says why it could not be used.
pub fn try_stream<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, NotStreamable> {
    let mut out = String::with_capacity(4096);
    value.serialize(Writer { out: &mut out })?;
    Ok(out.into_bytes())
}

/// Why a value could not be streamed (keys out of order, or a shape JSON has no form for).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotStreamable(pub String);

impl fmt::Display for NotStreamable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NotStreamable {}

impl ser::Error for NotStreamable {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        NotStreamable(msg.to_string())
    }
}

fn refuse<T>(why: &str) -> Result<T, NotStreamable> {
    Err(NotStreamable(why.to_string()))
}

struct Writer<'a> {
    out: &'a mut String,
}

/// The previous key of an object, to check the next one comes after it.
enum PrevKey {
    None,
    Static(&'static str),
    Owned(String),
}

impl PrevKey {
    fn as_str(&self) -> Option<&str> {
        match self {
            PrevKey::None => None,
            PrevKey::Static(s) => Some(s),
            PrevKey::Owned(s) => Some(s),
        }
    }
}

pub struct Compound<'a> {
    out: &'a mut String,
    first: bool,
    prev: PrevKey,
    /// Closing text: `]`, `}`, or `]}` / `}}` for enum variants wrapped in an object.
    close: &'static str,
}

impl<'a> Compound<'a> {
    fn open(out: &'a mut String, open: &str, close: &'static str) -> Self {
        out.push_str(open);
        Compound {
            out,
            first: true,
            prev: PrevKey::None,
            close,
        }
    }

    fn comma(&mut self) {
        if !self.first {
            self.out.push(',');
        }
        self.first = false;
    }

    fn check_order(&self, key: &str) -> Result<(), NotStreamable> {
        match self.prev.as_str() {
            Some(prev) if prev.as_bytes() >= key.as_bytes() => Err(NotStreamable(format!(
                "key {key:?} comes after {prev:?}: not in canonical order"
            ))),
            _ => Ok(()),
        }
    }

    fn end(self) -> Result<(), NotStreamable> {
        self.out.push_str(self.close);
        Ok(())
    }
}

/// `{"variant":` before an enum variant's content (serde_json's externally tagged form).
fn open_variant(out: &mut String, variant: &str) {
    out.push('{');
    write_string(out, variant);
    out.push(':');
}

macro_rules! write_integers {
    ($($method:ident: $ty:ty),*) => {$(
        fn $method(self, v: $ty) -> Result<(), NotStreamable> {
            let _ = write!(self.out, "{v}");
            Ok(())
        }
    )*};
}

impl<'a> ser::Serializer for Writer<'a> {
    type Ok = ();
    type Error = NotStreamable;
    type SerializeSeq = Compound<'a>;
    type SerializeTuple = Compound<'a>;
    type SerializeTupleStruct = Compound<'a>;
    type SerializeTupleVariant = Compound<'a>;
    type SerializeMap = Compound<'a>;
    type SerializeStruct = StructWriter<'a>;
    type SerializeStructVariant = Compound<'a>;

    fn serialize_bool(self, v: bool) -> Result<(), NotStreamable> {
        self.out.push_str(if v { "true" } else { "false" });
        Ok(())
    }
    // Integers of every width in decimal, as Python's `int.__repr__` writes them.
    write_integers!(
        serialize_i8: i8,
        serialize_i16: i16,
        serialize_i32: i32,
        serialize_i64: i64,
        serialize_i128: i128,
        serialize_u8: u8,
        serialize_u16: u16,
        serialize_u32: u32,
        serialize_u64: u64,
        serialize_u128: u128
    );
    fn serialize_f32(self, v: f32) -> Result<(), NotStreamable> {
        self.serialize_f64(v.into())
    }
    fn serialize_f64(self, v: f64) -> Result<(), NotStreamable> {
        // serde_json writes a non-finite float as null; the general path does the same.
        if !v.is_finite() {
            return refuse("non-finite float");
        }
        self.out.push_str(&super::python_float_repr(v));
        Ok(())
    }
    fn serialize_char(self, v: char) -> Result<(), NotStreamable> {
        write_string(self.out, v.encode_utf8(&mut [0; 4]));
        Ok(())
    }
    fn serialize_str(self, v: &str) -> Result<(), NotStreamable> {
        write_string(self.out, v);
        Ok(())
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<(), NotStreamable> {
        refuse("bytes")
    }
    fn serialize_none(self) -> Result<(), NotStreamable> {
        self.out.push_str("null");
        Ok(())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), NotStreamable> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), NotStreamable> {
        self.serialize_none()
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), NotStreamable> {
        self.serialize_none()
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<(), NotStreamable> {
        self.serialize_str(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<(), NotStreamable> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), NotStreamable> {
        open_variant(self.out, variant);
        value.serialize(Writer {
            out: &mut *self.out,
        })?;
        self.out.push('}');
        Ok(())
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Compound<'a>, NotStreamable> {
        Ok(Compound::open(self.out, "[", "]"))
    }
    fn serialize_tuple(self, _: usize) -> Result<Compound<'a>, NotStreamable> {
        Ok(Compound::open(self.out, "[", "]"))
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Compound<'a>, NotStreamable> {
        Ok(Compound::open(self.out, "[", "]"))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Compound<'a>, NotStreamable> {
        open_variant(self.out, variant);
        Ok(Compound::open(self.out, "[", "]}"))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Compound<'a>, NotStreamable> {
        Ok(Compound::open(self.out, "{", "}"))
    }
    fn serialize_struct(
        self,
        name: &'static str,
        _: usize,
    ) -> Result<StructWriter<'a>, NotStreamable> {
        match name {
            NUMBER_TOKEN => Ok(StructWriter::Number(self.out)),
            RAW_VALUE_TOKEN => refuse("serde_json RawValue"),
            _ => Ok(StructWriter::Object(Compound::open(self.out, "{", "}"))),
        }
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Compound<'a>, NotStreamable> {
        open_variant(self.out, variant);
        Ok(Compound::open(self.out, "{", "}}"))
    }
}

impl ser::SerializeSeq for Compound<'_> {
    type Ok = ();
    type Error = NotStreamable;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), NotStreamable> {
        self.comma();
        value.serialize(Writer {
            out: &mut *self.out,
        })
    }
    fn end(self) -> Result<(), NotStreamable> {
        Compound::end(self)
    }
}

/// Tuples of every kind are JSON arrays, written like sequences.
macro_rules! array_like {
    ($($kind:ident::$method:ident),*) => {$(
        impl ser::$kind for Compound<'_> {
            type Ok = ();
            type Error = NotStreamable;
            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), NotStreamable> {
                ser::SerializeSeq::serialize_element(self, value)
            }
            fn end(self) -> Result<(), NotStreamable> {
                Compound::end(self)
            }
        }
    )*};
}

array_like!(
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

impl ser::SerializeMap for Compound<'_> {
    type Ok = ();
    type Error = NotStreamable;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), NotStreamable> {
        let key = key.serialize(KeyText)?;
        self.check_order(&key)?;
        self.comma();
        write_string(self.out, &key);
        self.out.push(':');
        self.prev = PrevKey::Owned(key);
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), NotStreamable> {
        value.serialize(Writer {
            out: &mut *self.out,
        })
    }
    fn end(self) -> Result<(), NotStreamable> {
        Compound::end(self)
    }
}

impl ser::SerializeStructVariant for Compound<'_> {
    type Ok = ();
    type Error = NotStreamable;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), NotStreamable> {
        self.check_order(key)?;
        self.comma();
        write_string(self.out, key);
        self.out.push(':');
        self.prev = PrevKey::Static(key);
        value.serialize(Writer {
            out: &mut *self.out,
        })
    }
    fn end(self) -> Result<(), NotStreamable> {
        Compound::end(self)
    }
}

/// A struct: an ordinary object, or serde_json's exact-text number.
pub enum StructWriter<'a> {
    Object(Compound<'a>),
    Number(&'a mut String),
}

impl ser::SerializeStruct for StructWriter<'_> {
    type Ok = ();
    type Error = NotStreamable;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), NotStreamable> {
        match self {
            StructWriter::Object(c) => ser::SerializeStructVariant::serialize_field(c, key, value),
            StructWriter::Number(out) => {
                let text = value.serialize(KeyText)?;
                write_number_text(out, &text);
                Ok(())
            }
        }
    }
    fn end(self) -> Result<(), NotStreamable> {
        match self {
            StructWriter::Object(c) => c.end(),
            StructWriter::Number(_) => Ok(()),
        }
    }
}

/// Captures a string (an object key, or a number's text); anything else is refused, as
/// JSON object keys are strings.
struct KeyText;

macro_rules! refuse_scalar_keys {
    ($($method:ident: $ty:ty),*) => {$(
        fn $method(self, _: $ty) -> Result<String, NotStreamable> {
            refuse("non-string key")
        }
    )*};
}

impl ser::Serializer for KeyText {
    type Ok = String;
    type Error = NotStreamable;
    type SerializeSeq = Impossible<String, NotStreamable>;
    type SerializeTuple = Impossible<String, NotStreamable>;
    type SerializeTupleStruct = Impossible<String, NotStreamable>;
    type SerializeTupleVariant = Impossible<String, NotStreamable>;
    type SerializeMap = Impossible<String, NotStreamable>;
    type SerializeStruct = Impossible<String, NotStreamable>;
    type SerializeStructVariant = Impossible<String, NotStreamable>;

    fn serialize_str(self, v: &str) -> Result<String, NotStreamable> {
        Ok(v.to_string())
    }
    refuse_scalar_keys!(
        serialize_bool: bool,
        serialize_i8: i8,
        serialize_i16: i16,
        serialize_i32: i32,
        serialize_i64: i64,
        serialize_u8: u8,
        serialize_u16: u16,
        serialize_u32: u32,
        serialize_u64: u64,
        serialize_f32: f32,
        serialize_f64: f64
    );
    fn serialize_char(self, v: char) -> Result<String, NotStreamable> {
        Ok(v.to_string())
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<String, NotStreamable> {
        refuse("non-string key")
    }
    fn serialize_none(self) -> Result<String, NotStreamable> {
        refuse("non-string key")
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<String, NotStreamable> {
        refuse("non-string key")
    }
    fn serialize_unit(self) -> Result<String, NotStreamable> {
        refuse("non-string key")
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<String, NotStreamable> {
        refuse("non-string key")
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<String, NotStreamable> {
        Ok(variant.to_string())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<String, NotStreamable> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<String, NotStreamable> {
        refuse("non-string key")
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, NotStreamable> {
        refuse("non-string key")
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, NotStreamable> {
        refuse("non-string key")
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, NotStreamable> {
        refuse("non-string key")
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, NotStreamable> {
        refuse("non-string key")
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, NotStreamable> {
        refuse("non-string key")
    }
    fn serialize_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStruct, NotStreamable> {
        refuse("non-string key")
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, NotStreamable> {
        refuse("non-string key")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The general path, for comparison.
    fn via_value<T: Serialize>(v: &T) -> Vec<u8> {
        super::super::to_bytes(&serde_json::to_value(v).unwrap())
    }

    #[test]
    fn streams_values_byte_identically() {
        let docs = [
            json!(null),
            json!({"b": [1, 2.5, -0.0, 1e300, "x\u{1}\"é"], "a": {"z": true, "y": null}}),
            json!({"": 1, "a": [], "b": {}, "é": 2, "e": "\u{2028}"}),
        ];
        for doc in docs {
            assert_eq!(try_stream(&doc).unwrap(), via_value(&doc), "{doc}");
        }
    }

    /// Random documents (controls, escapes, astral characters, numbers of every form) stream
    /// to the same bytes as the `Value` path; a map's keys always arrive in order.
    #[test]
    fn random_documents_stream_byte_identically() {
        for doc in crate::test_docs::random_json_docs(2000) {
            assert_eq!(try_stream(&doc).unwrap(), via_value(&doc), "{doc}");
        }
    }

    #[test]
    fn keeps_number_text_quirks() {
        // Parsed leniently, NaN and big integers keep their exact text (arbitrary_precision).
        let v = crate::json::parse_lenient(
            br#"{"n":NaN,"i":123456789012345678901234567890,"f":1.0,"z":-0}"#,
        )
        .unwrap();
        let streamed = try_stream(&v).unwrap();
        assert_eq!(streamed, super::super::to_bytes(&v));
        assert_eq!(
            String::from_utf8(streamed).unwrap(),
            r#"{"f":1.0,"i":123456789012345678901234567890,"n":NaN,"z":0}"#
        );
    }

    #[derive(serde::Serialize)]
    struct Unsorted {
        zebra: u8,
        apple: u8,
    }

    #[derive(serde::Serialize)]
    enum Shape {
        Unit,
        Pair(u8, u8),
        Named { a: u8, b: Option<u8> },
    }

    #[test]
    fn out_of_order_struct_falls_back_to_the_same_bytes() {
        let v = Unsorted { zebra: 1, apple: 2 };
        let why = try_stream(&v).unwrap_err();
        assert!(why.0.contains("\"apple\""), "{why}");
        assert_eq!(to_bytes_of(&v), br#"{"apple":2,"zebra":1}"#.to_vec());
    }

    #[test]
    fn enum_forms_match_serde_json() {
        for v in [
            Shape::Unit,
            Shape::Pair(1, 2),
            Shape::Named { a: 1, b: None },
        ] {
            assert_eq!(try_stream(&v).unwrap(), via_value(&v));
        }
    }
}
