//! Step 1, the host: the profile is complete before anything is asked of the network.

use super::*;

pub(super) fn host_step(p: &HostProfile) -> Outcome {
    match p.validate() {
        Ok(()) => pass(format!(
            "{}: {}:{}{}",
            p.name,
            p.target(),
            p.port.unwrap_or(22),
            p.jump
                .as_ref()
                .map(|j| format!(" through {j}"))
                .unwrap_or_default()
        )),
        Err(e) => fail(
            e.to_string(),
            format!(
                "fix the profile: `headroom remote add {} … --replace`",
                p.name
            ),
        ),
    }
}
