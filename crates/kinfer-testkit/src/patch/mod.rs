//! Patch formats: JSON merge ([`merge`]), JSON patch ([`json`]), strategic merge
//! ([`strategic`]) and server-side apply with managed fields ([`apply`]), sharing list
//! semantics ([`shape`]) and field sets ([`fieldset`]).

pub mod apply;
pub mod fieldset;
pub mod json;
pub mod merge;
pub mod shape;
pub mod strategic;
