//! The energy a batch costs against the speed it gives: the sweep's most energy-efficient batch
//! beside the one chosen for speed, and the sentence that says the trade.

use serde::{Deserialize, Serialize};

/// The most energy-efficient batch measured against the one chosen: what it keeps of the chosen
/// batch's speed and what it costs of its energy per sample (both from the points' conditions).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnergyTradeoff {
    /// The batch with the fewest joules per sample.
    pub efficient_batch: u32,
    pub efficient_samples_per_joule: f64,
    /// The batch chosen for speed, and its samples per joule.
    pub chosen_batch: u32,
    pub chosen_samples_per_joule: f64,
    /// The efficient batch's throughput over the chosen one's (1: the same batch).
    pub speed_share: f64,
    /// The efficient batch's joules per sample over the chosen one's.
    pub energy_share: f64,
    /// A point was timed on battery power.
    #[serde(default)]
    pub on_battery: bool,
    /// [`EnergyTradeoff::sentence`], for the app and other readers of the JSON.
    #[serde(default)]
    pub text: String,
}

/// An efficient batch must save at least this share of the energy per sample to be named
/// beside the chosen one (smaller differences are within what power sampling tells apart).
pub const ENERGY_SAVING_SHARE: f64 = 0.1;

impl EnergyTradeoff {
    /// The efficient batch is another one, and it saves [`ENERGY_SAVING_SHARE`] or more.
    pub fn saves(&self) -> bool {
        self.efficient_batch != self.chosen_batch && self.energy_share <= 1.0 - ENERGY_SAVING_SHARE
    }

    /// One sentence: "batch 64 gives 91 % of batch 256's speed for 70 % of its energy per
    /// sample (41.2 samples/J against 28.9)", or that the chosen batch is also the most
    /// efficient; "on battery, " first when a point was timed so.
    pub fn sentence(&self) -> String {
        let lead = if self.on_battery { "on battery, " } else { "" };
        if self.saves() {
            format!(
                "{lead}batch {} gives {:.0} % of batch {}'s speed for {:.0} % of its energy per sample ({} samples/J against {})",
                self.efficient_batch,
                self.speed_share * 100.0,
                self.chosen_batch,
                self.energy_share * 100.0,
                crate::stats::sig3(self.efficient_samples_per_joule),
                crate::stats::sig3(self.chosen_samples_per_joule)
            )
        } else {
            format!(
                "{lead}batch {} is also about the most energy-efficient measured ({} samples/J)",
                self.chosen_batch,
                crate::stats::sig3(self.chosen_samples_per_joule)
            )
        }
    }
}
