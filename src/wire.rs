//! Serialized wire types: the `jidec-path-v1` record and the intake body.
