//! Reports of recorded runs, worth attaching where a figure is promised: the run's facts, its
//! points, and its curves (throughput and peak memory against batch, budget and chosen batch
//! marked) as Markdown with an SVG beside it, one standalone HTML file (the SVG inline, no
//! network), CSV of the points, or JSON.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::datasum::DataRecord;
use crate::plot::{epochs_svg, png_from_svg, readings_svg, sweep_svg, ChartSpec};
use headroom_model::epochs::{EpochSample, EpochThresholds};
use headroom_model::observed::Observed;
use headroom_model::outcome::WatchOutcome;
use headroom_model::protocol::Hello;
use headroom_model::protocol::Point;
use headroom_model::samples::ArtifactRtt;
use headroom_model::samples::MemoryReading;
use headroom_probe::mounts::MountClass;
use headroom_probe::readiness::{Conditions, PowerSource};
use headroom_store::ledger::{Ledger, RunContext, RunKind, RunRecord};
use headroom_store::CoreError;

// One part each: what was recorded and its proof, the fact rows, rendering, export, overlays,
// comparison.
mod compare;
mod export;
mod overlay;
mod proof;
mod render;
mod rows;

pub use self::compare::*;
pub use self::export::*;
pub use self::overlay::*;
pub use self::proof::*;
pub use self::render::*;
pub use self::rows::*;

/// A report format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Md,
    Html,
    Csv,
    Json,
    /// The run's charts alone, as SVG.
    Svg,
    /// The run's charts alone, as PNG.
    Png,
}

impl Format {
    pub fn parse(s: &str) -> Result<Self, CoreError> {
        match s {
            "md" | "markdown" => Ok(Self::Md),
            "html" => Ok(Self::Html),
            "csv" => Ok(Self::Csv),
            "json" => Ok(Self::Json),
            "svg" => Ok(Self::Svg),
            "png" => Ok(Self::Png),
            other => Err(CoreError::InvalidInput(format!(
                "unknown report format {other:?}: use md, html, csv, json, svg or png"
            ))),
        }
    }

    fn ext(self) -> &'static str {
        match self {
            Self::Md => "md",
            Self::Html => "html",
            Self::Csv => "csv",
            Self::Json => "json",
            Self::Svg => "svg",
            Self::Png => "png",
        }
    }
}

#[cfg(test)]
mod tests;
