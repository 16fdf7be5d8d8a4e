//! A serde deserializer that takes a struct only from a JSON object.
//!
//! serde's derived structs also accept a sequence (`[null, 1000, "log"]`
//! fills the fields in declaration order), and serde_json offers no switch
//! to turn that off. [`ObjectsOnly`] wraps any deserializer, at every level
//! of nesting, and refuses a sequence wherever a struct is asked for; every
//! other request passes through unchanged (a `Vec` still takes an array, a
//! `RawValue` still captures its text).

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, Visitor};

/// What a struct given as an array is told.
const NOT_AN_ARRAY: &str = "expected a JSON object, not an array";

/// A deserializer whose structs must be objects (maps).
pub struct ObjectsOnly<D>(pub D);

/// A visitor passed on by [`ObjectsOnly`]: what it is handed is wrapped in
/// turn. `struct_like` refuses a sequence.
struct Wrap<V> {
    inner: V,
    struct_like: bool,
}

impl<V> Wrap<V> {
    fn any(inner: V) -> Self {
        Wrap {
            inner,
            struct_like: false,
        }
    }

    fn object(inner: V) -> Self {
        Wrap {
            inner,
            struct_like: true,
        }
    }
}

/// Forwards `deserialize_*` methods that take only a visitor.
macro_rules! forward {
    ($($method:ident)*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
            self.0.$method(Wrap::any(visitor))
        }
    )*};
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for ObjectsOnly<D> {
    type Error = D::Error;

    forward! {
        deserialize_any deserialize_bool deserialize_i8 deserialize_i16 deserialize_i32
        deserialize_i64 deserialize_i128 deserialize_u8 deserialize_u16 deserialize_u32
        deserialize_u64 deserialize_u128 deserialize_f32 deserialize_f64 deserialize_char
        deserialize_str deserialize_string deserialize_bytes deserialize_byte_buf
        deserialize_option deserialize_unit deserialize_seq deserialize_map
        deserialize_identifier deserialize_ignored_any
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.deserialize_unit_struct(name, Wrap::any(visitor))
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.deserialize_newtype_struct(name, Wrap::any(visitor))
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.deserialize_tuple(len, Wrap::any(visitor))
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0
            .deserialize_tuple_struct(name, len, Wrap::any(visitor))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0
            .deserialize_struct(name, fields, Wrap::object(visitor))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.deserialize_enum(name, variants, Wrap::any(visitor))
    }

    fn is_human_readable(&self) -> bool {
        self.0.is_human_readable()
    }
}

/// Forwards `visit_*` methods of one plain argument.
macro_rules! visit {
    ($($method:ident($ty:ty))*) => {$(
        fn $method<E: de::Error>(self, v: $ty) -> Result<Self::Value, E> {
            self.inner.$method(v)
        }
    )*};
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Wrap<V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        self.inner.expecting(f)
    }

    visit! {
        visit_bool(bool) visit_i8(i8) visit_i16(i16) visit_i32(i32) visit_i64(i64)
        visit_i128(i128) visit_u8(u8) visit_u16(u16) visit_u32(u32) visit_u64(u64)
        visit_u128(u128) visit_f32(f32) visit_f64(f64) visit_char(char)
        visit_str(&str) visit_borrowed_str(&'de str) visit_string(String)
        visit_bytes(&[u8]) visit_borrowed_bytes(&'de [u8]) visit_byte_buf(Vec<u8>)
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        self.inner.visit_none()
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        self.inner.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        self.inner.visit_some(ObjectsOnly(d))
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        self.inner.visit_newtype_struct(ObjectsOnly(d))
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        if self.struct_like {
            return Err(de::Error::custom(NOT_AN_ARRAY));
        }
        self.inner.visit_seq(ObjectsOnly(seq))
    }

    fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        self.inner.visit_map(ObjectsOnly(map))
    }

    fn visit_enum<A: de::EnumAccess<'de>>(self, data: A) -> Result<Self::Value, A::Error> {
        self.inner.visit_enum(ObjectsOnly(data))
    }
}

/// A seed whose deserializer is wrapped.
struct Seed<S>(S);

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for Seed<S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        self.0.deserialize(ObjectsOnly(d))
    }
}

impl<'de, A: de::SeqAccess<'de>> de::SeqAccess<'de> for ObjectsOnly<A> {
    type Error = A::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Self::Error> {
        self.0.next_element_seed(Seed(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

impl<'de, A: de::MapAccess<'de>> de::MapAccess<'de> for ObjectsOnly<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Self::Error> {
        self.0.next_key_seed(Seed(seed))
    }

    fn next_value_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<T::Value, Self::Error> {
        self.0.next_value_seed(Seed(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

impl<'de, A: de::EnumAccess<'de>> de::EnumAccess<'de> for ObjectsOnly<A> {
    type Error = A::Error;
    type Variant = ObjectsOnly<A::Variant>;

    fn variant_seed<S: DeserializeSeed<'de>>(
        self,
        seed: S,
    ) -> Result<(S::Value, Self::Variant), Self::Error> {
        self.0
            .variant_seed(Seed(seed))
            .map(|(v, access)| (v, ObjectsOnly(access)))
    }
}

impl<'de, A: de::VariantAccess<'de>> de::VariantAccess<'de> for ObjectsOnly<A> {
    type Error = A::Error;

    fn unit_variant(self) -> Result<(), Self::Error> {
        self.0.unit_variant()
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(
        self,
        seed: T,
    ) -> Result<T::Value, Self::Error> {
        self.0.newtype_variant_seed(Seed(seed))
    }

    fn tuple_variant<V: Visitor<'de>>(
        self,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.tuple_variant(len, Wrap::any(visitor))
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.struct_variant(fields, Wrap::object(visitor))
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::value::RawValue;

    use super::*;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Inner {
        a: u32,
    }

    #[derive(Debug, Deserialize)]
    struct Outer<'a> {
        inner: Inner,
        #[serde(default)]
        list: Vec<Inner>,
        #[serde(borrow)]
        raw: &'a RawValue,
        #[serde(default)]
        pair: Option<(u8, String)>,
    }

    fn strict<'de, T: Deserialize<'de>>(text: &'de str) -> Result<T, serde_json::Error> {
        T::deserialize(ObjectsOnly(&mut serde_json::Deserializer::from_str(text)))
    }

    #[test]
    fn objects_pass_and_arrays_hold_lists_and_tuples() {
        let o: Outer<'_> = strict(
            r#"{"inner": {"a": 1}, "list": [{"a": 2}], "raw": [1, {"x": []}], "pair": [3, "z"]}"#,
        )
        .unwrap();
        assert_eq!(o.inner, Inner { a: 1 });
        assert_eq!(o.list, [Inner { a: 2 }]);
        assert_eq!(o.raw.get(), r#"[1, {"x": []}]"#);
        assert_eq!(o.pair, Some((3, "z".to_string())));
    }

    #[test]
    fn a_struct_is_never_an_array_at_any_depth() {
        // Plain serde_json takes all three.
        assert!(serde_json::from_str::<Inner>("[1]").is_ok());
        let e = strict::<Inner>("[1]").unwrap_err();
        assert!(e.to_string().contains(NOT_AN_ARRAY), "{e}");
        let e = strict::<Outer<'_>>(r#"{"inner": [1], "raw": 0}"#).unwrap_err();
        assert!(e.to_string().contains(NOT_AN_ARRAY), "{e}");
        let e = strict::<Outer<'_>>(r#"{"inner": {"a": 1}, "list": [[2]], "raw": 0}"#).unwrap_err();
        assert!(e.to_string().contains(NOT_AN_ARRAY), "{e}");
    }

    #[test]
    fn values_and_escaped_strings_pass_through() {
        let v: serde_json::Value = strict(r#"{"k": ["\u0061", {"n": null}]}"#).unwrap();
        assert_eq!(v, serde_json::json!({"k": ["a", {"n": null}]}));
        // A struct from an already parsed value is held to the same rule.
        let e = Inner::deserialize(ObjectsOnly(serde_json::json!([1]))).unwrap_err();
        assert!(e.to_string().contains(NOT_AN_ARRAY), "{e}");
    }
}
