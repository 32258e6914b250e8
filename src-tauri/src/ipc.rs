//! The IPC contract in TypeScript, generated from the Rust types with ts-rs into the committed
//! `ui/src/backend/ipc.ts`. A test fails when that file is stale; `HEADROOM_BLESS=1 cargo test -p
//! headroom-app` rewrites it.

use ts_rs::TS;

/// The generated file's text.
pub fn typescript() -> String {
    use headroom_core::jobs::sweep::{JobError, Update};
    use headroom_core::ledger::{RunRecord, RunStatus};
    use headroom_core::protocol::{Hello, Phase, Point, PointStatus, SweepSummary};
    use headroom_core::readiness::python::{MlxFacts, ProbeStatus, PythonFacts, TorchFacts};
    use headroom_core::readiness::{
        BatteryFacts, Conditions, DeviceCheck, GpuFacts, LibtorchFacts, Light, LightState,
        MachineFacts, PowerSource, PythonReport, Report,
    };
    let decls = [
        Report::decl(),
        MachineFacts::decl(),
        GpuFacts::decl(),
        Conditions::decl(),
        PowerSource::decl(),
        BatteryFacts::decl(),
        LibtorchFacts::decl(),
        DeviceCheck::decl(),
        PythonReport::decl(),
        ProbeStatus::decl(),
        PythonFacts::decl(),
        TorchFacts::decl(),
        MlxFacts::decl(),
        Light::decl(),
        LightState::decl(),
        Point::decl(),
        PointStatus::decl(),
        SweepSummary::decl(),
        Hello::decl(),
        Phase::decl(),
        Update::decl(),
        JobError::decl(),
        RunRecord::decl(),
        RunStatus::decl(),
        crate::state::SweepSnapshot::decl(),
        crate::commands::SweepForm::decl(),
        crate::error::AppError::decl(),
        crate::memory::MemorySnapshot::decl(),
        crate::memory::EpochsForm::decl(),
        crate::memory::ProcessInfo::decl(),
        headroom_core::epochs::EpochSample::decl(),
        headroom_core::epochs::EpochVerdict::decl(),
        headroom_core::epochs::EpochVerdictKind::decl(),
        headroom_core::epochs::Trend::decl(),
        headroom_core::monitor::MemoryReading::decl(),
        crate::overview::OverviewSnapshot::decl(),
        headroom_core::decide::Decision::decl(),
        headroom_core::decide::Column::decl(),
        headroom_core::decide::Status::decl(),
        headroom_core::decide::Rule::decl(),
        headroom_core::decide::Reason::decl(),
        headroom_core::decide::ColumnVerdict::decl(),
        headroom_core::decide::Symptom::decl(),
        headroom_core::contention::ContentionReport::decl(),
        headroom_core::contention::GroupMemory::decl(),
        headroom_core::contention::AppMemory::decl(),
        headroom_core::contention::Group::decl(),
        headroom_core::contention::SystemSide::decl(),
        headroom_core::contention::Pressure::decl(),
        headroom_core::contention::Need::decl(),
        headroom_core::remote::HostProfile::decl(),
        headroom_core::remote::check::CheckReport::decl(),
        headroom_core::remote::check::Failure::decl(),
        headroom_core::remote::check::FailureKind::decl(),
        crate::remote::KeyInfo::decl(),
        crate::remote::MigrationCommands::decl(),
        crate::ledger::Fact::decl(),
        crate::ledger::RunReport::decl(),
        crate::ledger::Comparison::decl(),
        crate::about::About::decl(),
    ];
    let mut out = String::from(
        "// Generated from the Rust types by src-tauri/src/ipc.rs (ts-rs). Do not edit:\n\
         // run `HEADROOM_BLESS=1 cargo test -p headroom-app` after changing them.\n\
         // Byte counts are u64 in Rust and plain numbers in JSON (all far below 2^53).\n\n",
    );
    for d in decls {
        out.push_str("export ");
        out.push_str(&d.replace("bigint", "number"));
        out.push_str("\n\n");
    }
    out.truncate(out.trim_end().len());
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    #[test]
    fn the_committed_typescript_matches_the_rust_types() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../ui/src/backend/ipc.ts");
        let want = super::typescript();
        if std::env::var_os("HEADROOM_BLESS").is_some() {
            std::fs::write(&path, &want).expect("write ipc.ts");
        }
        let have = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            have == want,
            "ui/src/backend/ipc.ts is stale: run `HEADROOM_BLESS=1 cargo test -p headroom-app` and commit it"
        );
    }
}
