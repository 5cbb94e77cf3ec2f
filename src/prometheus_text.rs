//! The Prometheus text exposition format (version 0.0.4), written once for every face that
//! serves `/metrics`: the daemon's figures, the ledger follower's and the alert deliveries'.
//! Pure: it appends to a `String`, so each writer keeps its own order and no output changes
//! shape when a family moves from one writer to another.
//!
//! Escaping follows the format: in label values backslash, double quote and newline; in `HELP`
//! text backslash and newline.

use std::fmt::{Display, Write as _};

/// What a family is (`# TYPE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
        }
    }
}

/// Appends families and their samples to a text exposition.
pub struct TextWriter<'a> {
    out: &'a mut String,
}

impl<'a> TextWriter<'a> {
    pub fn new(out: &'a mut String) -> TextWriter<'a> {
        TextWriter { out }
    }

    /// `# HELP` and `# TYPE` of the family `name`; its samples follow.
    pub fn family(&mut self, name: &str, kind: Kind, help: &str) -> &mut Self {
        let _ = writeln!(self.out, "# HELP {name} {}", escape_help(help));
        let _ = writeln!(self.out, "# TYPE {name} {}", kind.as_str());
        self
    }

    /// One sample: `name{label="value",…} value` (no braces without labels).
    pub fn sample(
        &mut self,
        name: &str,
        labels: &[(&str, &str)],
        value: impl Display,
    ) -> &mut Self {
        self.out.push_str(name);
        if !labels.is_empty() {
            self.out.push('{');
            for (i, (label, v)) in labels.iter().enumerate() {
                if i > 0 {
                    self.out.push(',');
                }
                let _ = write!(self.out, "{label}=\"{}\"", escape_label_value(v));
            }
            self.out.push('}');
        }
        let _ = writeln!(self.out, " {value}");
        self
    }

    /// A family and its samples, one a row: the row's values of `labels`, and its value.
    pub fn labelled<const N: usize, S: AsRef<str>, V: Display>(
        &mut self,
        (name, kind, help): (&str, Kind, &str),
        labels: [&str; N],
        rows: impl IntoIterator<Item = ([S; N], V)>,
    ) -> &mut Self {
        self.family(name, kind, help);
        for (values, value) in rows {
            let pairs: [(&str, &str); N] = std::array::from_fn(|i| (labels[i], values[i].as_ref()));
            self.sample(name, &pairs, value);
        }
        self
    }

    /// A family with a single unlabelled sample.
    pub fn single(&mut self, name: &str, kind: Kind, help: &str, value: impl Display) -> &mut Self {
        self.family(name, kind, help).sample(name, &[], value)
    }
}

/// A label value as the text format wants it: `\` → `\\`, `"` → `\"`, newline → `\n`.
pub fn escape_label_value(v: &str) -> std::borrow::Cow<'_, str> {
    if !v.contains(['\\', '"', '\n']) {
        return v.into();
    }
    let mut s = String::with_capacity(v.len() + 2);
    for c in v.chars() {
        match c {
            '\\' => s.push_str("\\\\"),
            '"' => s.push_str("\\\""),
            '\n' => s.push_str("\\n"),
            c => s.push(c),
        }
    }
    s.into()
}

/// `HELP` text: `\` → `\\`, newline → `\n` (a quote needs no escape there).
fn escape_help(v: &str) -> std::borrow::Cow<'_, str> {
    if !v.contains(['\\', '\n']) {
        return v.into();
    }
    v.replace('\\', "\\\\").replace('\n', "\\n").into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(escape_label_value("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
        assert_eq!(escape_label_value("plain"), "plain");
    }

    #[test]
    fn families_and_samples_are_written_in_order() {
        let mut out = String::new();
        TextWriter::new(&mut out)
            .family("x_total", Kind::Counter, "Things.\nMore \\ things.")
            .sample("x_total", &[("a", "1"), ("b", "q\"")], 3)
            .single("y", Kind::Gauge, "Why.", 1.5);
        assert_eq!(
            out,
            "# HELP x_total Things.\\nMore \\\\ things.\n# TYPE x_total counter\n\
             x_total{a=\"1\",b=\"q\\\"\"} 3\n# HELP y Why.\n# TYPE y gauge\ny 1.5\n"
        );
    }
}
