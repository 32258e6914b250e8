//! Headroom's pictures and papers: charts of sweeps, epochs and memory readings (SVG, and PNG
//! rasterised with the system's fonts), a run's report in Markdown, HTML or CSV with its facts
//! and proofs, exports, comparisons of two runs and overlays, and a dataset's checksums
//! (`datasum`) that make two runs comparable. It reads the ledger; it runs nothing.

pub mod datasum;
pub mod plot;
pub mod report;
