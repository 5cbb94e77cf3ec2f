//! A parsed JSON document in compact form, and borrowed views into it.
//!
//! A card is a stranger's document of up to 1 MiB, and its shape is the stranger's choice. A
//! tree of `serde_json::Value` costs what the shape makes it cost: a one-key object is a B-tree
//! node of about 640 bytes, so a 1 MB card of nested one-key objects took over 100 MiB. A [`Doc`]
//! costs what the text costs: one 12-byte [`Node`] per value and member name, in pre-order in a
//! single `Vec`, and the decoded text of every string and number in one arena. A value can
//! cost no less than two bytes of text (`0,`), so 1 MiB of any shape is at most about 6 MiB of
//! nodes and 1 MiB of arena, freed in two deallocations (no recursive drop).
//!
//! [`JsonRef`] reads it the way the walk reads a `serde_json::Value` (`get`, `as_str`,
//! `as_array`, ...), with Python's dict semantics for duplicate names (the last value wins), and
//! writes any subtree in the NENRIN canonical form without building anything else.

use serde_json::{Map, Number, Value};

/// What a node is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Tag {
    Null,
    False,
    True,
    Number,
    String,
    Array,
    Object,
}

/// A number with a fraction or an exponent (a Python float).
pub(crate) const FLAG_FLOAT: u8 = 1;
/// `NaN`, `Infinity` or `-Infinity` (its text is that word).
pub(crate) const FLAG_CONSTANT: u8 = 2;
/// A string that held a lone surrogate escape, kept as U+FFFD (§8.3 item 23).
pub(crate) const FLAG_LONE_SURROGATE: u8 = 4;

/// One value or member name. Scalars: `a`, `b` = offset and length of its text in the arena.
/// Containers: `a` = items (array) or members (object), `b` = nodes in its subtree after
/// itself, so the next sibling is at `index + 1 + b`. An object's members are laid out as a
/// name (a string node) followed by the value's subtree.
#[derive(Debug, Clone, Copy)]
pub struct Node {
    pub(crate) tag: Tag,
    pub(crate) flags: u8,
    pub(crate) a: u32,
    pub(crate) b: u32,
}

/// A parsed document: nodes in pre-order, the root at index 0.
#[derive(Debug, Clone, Default)]
pub struct Doc {
    pub(crate) nodes: Vec<Node>,
    pub(crate) arena: String,
    pub(crate) lone_surrogates: bool,
    /// For each string that held a lone surrogate: its arena offset and its text as WTF-8
    /// (the surrogate as its three-byte form, the same length as the U+FFFD written in the
    /// arena). Member names sort and compare by these bytes, which is code point order with
    /// the surrogates where Python has them.
    pub(crate) originals: Vec<(u32, Vec<u8>)>,
}

impl PartialEq for Doc {
    /// As `serde_json::Value`s compare (see [`JsonRef`]'s `PartialEq`).
    fn eq(&self, other: &Self) -> bool {
        self.root() == other.root()
    }
}

impl Doc {
    /// The root value.
    pub fn root(&self) -> JsonRef<'_> {
        JsonRef { doc: self, at: 0 }
    }

    /// A value by its node index (from [`JsonRef::index`]).
    pub fn at(&self, index: u32) -> JsonRef<'_> {
        debug_assert!((index as usize) < self.nodes.len());
        JsonRef {
            doc: self,
            at: index,
        }
    }

    /// Whether any string held a lone surrogate escape (kept as U+FFFD).
    pub fn has_lone_surrogates(&self) -> bool {
        self.lone_surrogates
    }

    /// About what this document would take as a `serde_json::Value` tree: a B-tree node per
    /// object, a slot and a small heap block per value, the text once more.
    pub fn estimated_value_bytes(&self) -> usize {
        let objects = self.nodes.iter().filter(|n| n.tag == Tag::Object).count();
        objects * 640 + self.nodes.len() * 64 + self.arena.len()
    }

    /// Bytes this document holds on the heap.
    pub fn heap_bytes(&self) -> usize {
        self.nodes.capacity() * std::mem::size_of::<Node>() + self.arena.capacity()
    }

    fn node(&self, at: u32) -> Node {
        self.nodes[at as usize]
    }

    // Building, for the reader.

    pub(crate) fn with_capacity(text_len: usize) -> Doc {
        Doc {
            // Most documents hold a value per 8 to 16 bytes of text; grow from there.
            nodes: Vec::with_capacity(text_len / 16 + 1),
            arena: String::with_capacity(text_len / 2 + 1),
            lone_surrogates: false,
            originals: Vec::new(),
        }
    }

    pub(crate) fn push(&mut self, node: Node) -> u32 {
        let at = self.nodes.len() as u32;
        self.nodes.push(node);
        at
    }

    pub(crate) fn push_text(&mut self, tag: Tag, flags: u8, text: &str) -> u32 {
        let a = self.arena.len() as u32;
        self.arena.push_str(text);
        self.push(Node {
            tag,
            flags,
            a,
            b: text.len() as u32,
        })
    }

    pub(crate) fn tag(&self, at: u32) -> Tag {
        self.nodes[at as usize].tag
    }

    /// Close the container at `at` (every node after it is inside it): count its children and
    /// record its subtree size.
    pub(crate) fn close(&mut self, at: u32) {
        let end = self.nodes.len() as u32;
        let mut count = 0u32;
        let mut next = at + 1;
        while next < end {
            count += 1;
            next += 1 + JsonRef {
                doc: self,
                at: next,
            }
            .subtree_len();
        }
        let node = &mut self.nodes[at as usize];
        if node.tag == Tag::Object {
            count /= 2;
        }
        node.a = count;
        node.b = end - at - 1;
    }

    /// The first member name that repeats in the object at `at`, if any.
    pub(crate) fn duplicate_name(&self, at: u32) -> Option<String> {
        let obj = ObjectRef {
            value: JsonRef { doc: self, at },
        };
        let mut names: Vec<&str> = obj.keys().collect();
        names.sort_unstable();
        names
            .windows(2)
            .find(|w| w[0] == w[1])
            .map(|w| w[0].to_string())
    }

    pub(crate) fn shrink(&mut self) {
        self.nodes.shrink_to_fit();
        self.arena.shrink_to_fit();
    }

    fn text(&self, node: Node) -> &str {
        &self.arena[node.a as usize..(node.a + node.b) as usize]
    }

    /// The bytes a string sorts and compares by: its UTF-8, or for one that held a lone
    /// surrogate, its WTF-8.
    fn name_bytes(&self, node: Node) -> &[u8] {
        if node.flags & FLAG_LONE_SURROGATE != 0
            && let Ok(i) = self.originals.binary_search_by_key(&node.a, |(a, _)| *a)
        {
            return &self.originals[i].1;
        }
        self.text(node).as_bytes()
    }
}

/// A value inside a [`Doc`].
#[derive(Clone, Copy)]
pub struct JsonRef<'a> {
    doc: &'a Doc,
    at: u32,
}

impl std::fmt::Debug for JsonRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.canonical_string())
    }
}

impl PartialEq for JsonRef<'_> {
    /// `serde_json::Value` equality: same kind, numbers by their text, objects as maps (after
    /// last-wins), arrays item by item.
    fn eq(&self, other: &Self) -> bool {
        match (self.object(), other.object()) {
            (Some(a), Some(b)) => {
                let (a, b) = (a.entries(), b.entries());
                return a.len() == b.len()
                    && a.iter()
                        .zip(&b)
                        .all(|((ka, va), (kb, vb))| ka == kb && va == vb);
            }
            (None, None) => {}
            _ => return false,
        }
        let (na, nb) = (self.node(), other.node());
        if na.tag != nb.tag {
            return false;
        }
        match na.tag {
            Tag::Null | Tag::True | Tag::False => true,
            Tag::Number | Tag::String => self.doc.text(na) == other.doc.text(nb),
            Tag::Array => na.a == nb.a && self.items().zip(other.items()).all(|(x, y)| x == y),
            Tag::Object => unreachable!("objects compared above"),
        }
    }
}

impl<'a> JsonRef<'a> {
    fn node(&self) -> Node {
        self.doc.node(self.at)
    }

    /// The node index, to find this value again with [`Doc::at`].
    pub fn index(&self) -> u32 {
        self.at
    }

    pub fn tag(&self) -> Tag {
        self.node().tag
    }

    pub fn is_null(&self) -> bool {
        self.tag() == Tag::Null
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self.tag() {
            Tag::True => Some(true),
            Tag::False => Some(false),
            _ => None,
        }
    }

    pub fn is_boolean(&self) -> bool {
        self.as_bool().is_some()
    }

    pub fn as_str(&self) -> Option<&'a str> {
        let node = self.node();
        (node.tag == Tag::String).then(|| self.doc.text(node))
    }

    pub fn is_string(&self) -> bool {
        self.tag() == Tag::String
    }

    pub fn is_number(&self) -> bool {
        self.tag() == Tag::Number
    }

    /// A number's text as written (`NaN`, `Infinity`, `-Infinity` for Python's constants).
    pub fn number_text(&self) -> Option<&'a str> {
        let node = self.node();
        (node.tag == Tag::Number).then(|| self.doc.text(node))
    }

    /// A number's value as a double (`NaN` for `NaN`; an integer beyond f64 rounds).
    pub fn as_f64(&self) -> Option<f64> {
        let node = self.node();
        if node.tag != Tag::Number {
            return None;
        }
        Some(match self.doc.text(node) {
            "NaN" => f64::NAN,
            "Infinity" => f64::INFINITY,
            "-Infinity" => f64::NEG_INFINITY,
            text => text.parse().unwrap_or(f64::NAN),
        })
    }

    /// Whether a number is a Python float (fraction, exponent, or a constant).
    pub fn is_float(&self) -> bool {
        self.node().flags & (FLAG_FLOAT | FLAG_CONSTANT) != 0
    }

    pub fn is_array(&self) -> bool {
        self.tag() == Tag::Array
    }

    pub fn is_object(&self) -> bool {
        self.tag() == Tag::Object
    }

    /// The items of an array.
    pub fn as_array(&self) -> Option<ArrayRef<'a>> {
        (self.tag() == Tag::Array).then_some(ArrayRef { value: *self })
    }

    /// The members of an object.
    pub fn as_object(&self) -> Option<ObjectRef<'a>> {
        self.object()
    }

    fn object(&self) -> Option<ObjectRef<'a>> {
        (self.tag() == Tag::Object).then_some(ObjectRef { value: *self })
    }

    /// An object's member (the last one of that name); None for anything else.
    pub fn get(&self, key: &str) -> Option<JsonRef<'a>> {
        self.object()?.get(key)
    }

    /// Items of an array (empty for anything else).
    fn items(&self) -> Items<'a> {
        let node = self.node();
        let remaining = if node.tag == Tag::Array { node.a } else { 0 };
        Items {
            doc: self.doc,
            next: self.at + 1,
            remaining,
        }
    }

    /// Whether this value as written (duplicate names resolved, as a dict holds them) has a
    /// string, a member name included, that held a lone surrogate escape.
    pub fn holds_lone_surrogate(&self) -> bool {
        if !self.doc.lone_surrogates {
            return false;
        }
        let node = self.node();
        match node.tag {
            Tag::String => node.flags & FLAG_LONE_SURROGATE != 0,
            Tag::Array => self.items().any(|item| item.holds_lone_surrogate()),
            Tag::Object => ObjectRef { value: *self }
                .entries_with_names()
                .into_iter()
                .any(|(name, value)| name.holds_lone_surrogate() || value.holds_lone_surrogate()),
            _ => false,
        }
    }

    fn subtree_len(&self) -> u32 {
        let node = self.node();
        match node.tag {
            Tag::Array | Tag::Object => node.b,
            _ => 0,
        }
    }

    /// The NENRIN canonical text (conduct-walk.md §4.1) of this value: Python's
    /// `json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False)`.
    pub fn canonical_string(&self) -> String {
        let mut out = String::with_capacity(64);
        self.write_canonical(&mut out);
        out
    }

    /// Append the canonical text to `out`.
    pub fn write_canonical(&self, out: &mut String) {
        let node = self.node();
        match node.tag {
            Tag::Null => out.push_str("null"),
            Tag::True => out.push_str("true"),
            Tag::False => out.push_str("false"),
            Tag::Number => {
                let text = self.doc.text(node);
                if node.flags & FLAG_CONSTANT != 0 {
                    out.push_str(text);
                } else {
                    crate::canonical::write_number_text(out, text);
                }
            }
            Tag::String => crate::canonical::write_string(out, self.doc.text(node)),
            Tag::Array => {
                out.push('[');
                for (i, item) in self.items().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    item.write_canonical(out);
                }
                out.push(']');
            }
            Tag::Object => {
                out.push('{');
                let entries = ObjectRef { value: *self }.entries();
                for (i, (k, v)) in entries.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    crate::canonical::write_string(out, k);
                    out.push(':');
                    v.write_canonical(out);
                }
                out.push('}');
            }
        }
    }

    /// This value as a `serde_json::Value` (numbers keep their text; `NaN` and the infinities
    /// become the number texts [`crate::json::number_f64`] and `crate::canonical` read back).
    /// It costs what a `Value` tree costs: call it for small, bounded parts only.
    pub fn to_value(&self) -> Value {
        let node = self.node();
        match node.tag {
            Tag::Null => Value::Null,
            Tag::True => Value::Bool(true),
            Tag::False => Value::Bool(false),
            Tag::Number => {
                let text = match self.doc.text(node) {
                    "NaN" => super::NAN_MARKER,
                    "Infinity" => super::INFINITY_TEXT,
                    "-Infinity" => super::NEG_INFINITY_TEXT,
                    text => text,
                };
                Value::Number(text.parse::<Number>().expect("a JSON number's text"))
            }
            Tag::String => Value::String(self.doc.text(node).to_string()),
            Tag::Array => Value::Array(self.items().map(|v| v.to_value()).collect()),
            Tag::Object => {
                let mut map = Map::new();
                for (k, v) in (ObjectRef { value: *self }).members() {
                    map.insert(k.to_string(), v.to_value());
                }
                Value::Object(map)
            }
        }
    }
}

/// Sibling values: an array's items.
#[derive(Clone)]
pub struct Items<'a> {
    doc: &'a Doc,
    next: u32,
    remaining: u32,
}

impl<'a> Iterator for Items<'a> {
    type Item = JsonRef<'a>;
    fn next(&mut self) -> Option<JsonRef<'a>> {
        if self.remaining == 0 {
            return None;
        }
        self.remaining -= 1;
        let item = JsonRef {
            doc: self.doc,
            at: self.next,
        };
        self.next += 1 + item.subtree_len();
        Some(item)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining as usize, Some(self.remaining as usize))
    }
}

/// An array's items.
#[derive(Clone, Copy)]
pub struct ArrayRef<'a> {
    value: JsonRef<'a>,
}

impl<'a> ArrayRef<'a> {
    pub fn len(&self) -> usize {
        self.value.node().a as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn first(&self) -> Option<JsonRef<'a>> {
        self.iter().next()
    }

    pub fn iter(&self) -> Items<'a> {
        self.value.items()
    }
}

impl<'a> IntoIterator for ArrayRef<'a> {
    type Item = JsonRef<'a>;
    type IntoIter = Items<'a>;
    fn into_iter(self) -> Items<'a> {
        self.value.items()
    }
}

/// An object's members, read as Python reads them into a dict: the last value of a name wins.
#[derive(Clone, Copy)]
pub struct ObjectRef<'a> {
    value: JsonRef<'a>,
}

impl<'a> ObjectRef<'a> {
    /// Members as written, duplicates included, in document order.
    pub fn members(&self) -> impl Iterator<Item = (&'a str, JsonRef<'a>)> + use<'a> {
        let node = self.value.node();
        let mut children = Items {
            doc: self.value.doc,
            next: self.value.at + 1,
            remaining: node.a * 2,
        };
        std::iter::from_fn(move || {
            let key = children.next()?;
            let value = children.next()?;
            Some((key.as_str().expect("a member name is a string"), value))
        })
    }

    /// Members as written with each name as a node (to ask about its text's origin).
    pub(crate) fn members_with_names(
        &self,
    ) -> impl Iterator<Item = (JsonRef<'a>, JsonRef<'a>)> + use<'a> {
        let node = self.value.node();
        let mut children = Items {
            doc: self.value.doc,
            next: self.value.at + 1,
            remaining: node.a * 2,
        };
        std::iter::from_fn(move || Some((children.next()?, children.next()?)))
    }

    /// The value of `key` (the last member of that name).
    pub fn get(&self, key: &str) -> Option<JsonRef<'a>> {
        self.members()
            .filter(|(k, _)| *k == key)
            .last()
            .map(|(_, v)| v)
    }

    pub fn contains_key(&self, key: &str) -> bool {
        self.members().any(|(k, _)| k == key)
    }

    /// Distinct names (as a dict has them).
    pub fn keys(&self) -> impl Iterator<Item = &'a str> + use<'a> {
        self.members().map(|(k, _)| k)
    }

    /// Distinct members sorted by name in code point order, each with its last value: what
    /// Python's `sort_keys` writes.
    pub fn entries(&self) -> Vec<(&'a str, JsonRef<'a>)> {
        self.entries_with_names()
            .into_iter()
            .map(|(name, value)| (name.as_str().expect("a member name is a string"), value))
            .collect()
    }

    /// [`ObjectRef::entries`] with each name as a node (to ask about its text's origin).
    pub(crate) fn entries_with_names(&self) -> Vec<(JsonRef<'a>, JsonRef<'a>)> {
        let node = self.value.node();
        let mut children = Items {
            doc: self.value.doc,
            next: self.value.at + 1,
            remaining: node.a * 2,
        };
        let mut members = Vec::with_capacity(node.a as usize);
        while let (Some(name), Some(value)) = (children.next(), children.next()) {
            members.push((name, value));
        }
        let doc = self.value.doc;
        let text = |r: &JsonRef<'a>| doc.name_bytes(r.node());
        // Stable: among equal names the last written stays last, and its value is kept.
        members.sort_by(|a, b| text(&a.0).cmp(text(&b.0)));
        let mut out: Vec<(JsonRef<'a>, JsonRef<'a>)> = Vec::with_capacity(members.len());
        for (k, v) in members {
            match out.last_mut() {
                // The name kept is the first one written (Python's dict keeps its first key).
                Some(last) if text(&last.0) == text(&k) => last.1 = v,
                _ => out.push((k, v)),
            }
        }
        out
    }

    /// How many distinct names.
    pub fn len(&self) -> usize {
        self.entries().len()
    }

    pub fn is_empty(&self) -> bool {
        self.value.node().a == 0
    }
}
