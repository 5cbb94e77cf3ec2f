//! The n0–n3 conduct walk (conduct-walk.md §1–§4).
