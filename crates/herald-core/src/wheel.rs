//! Hierarchical timing wheel (placeholder: implemented in its own change).
