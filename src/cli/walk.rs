//! `conduct-walker walk`.
