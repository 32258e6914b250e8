//! The IPC contract in TypeScript, generated from the Rust types with ts-rs into the committed
//! `ui/src/backend/ipc.ts`. A test fails when that file is stale; `HEADROOM_BLESS=1 cargo test -p
//! headroom-app` rewrites it.

use ts_rs::TS;

/// The generated file's text.
pub fn typescript() -> String {
    use headroom_core::jobs::sweep::{JobError, Update};
    use headroom_model::protocol::{Hello, Phase, Point, PointStatus, SweepSummary};
    use headroom_probe::readiness::python::{MlxFacts, ProbeStatus, PythonFacts, TorchFacts};
    use headroom_probe::readiness::{
        BatteryFacts, Conditions, DeviceCheck, GpuFacts, LibtorchFacts, Light, LightState,
        MachineFacts, PowerSource, PythonReport, Report,
    };
    use headroom_store::ledger::{RunRecord, RunStatus};
    let decls = [
        Report::decl(),
        MachineFacts::decl(),
        GpuFacts::decl(),
        headroom_probe::readiness::isolation::Isolation::decl(),
        headroom_probe::readiness::isolation::SharedFolder::decl(),
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
        headroom_model::summary::EnergyTradeoff::decl(),
        headroom_core::jobs::detached::DetachedState::decl(),
        crate::remote::RemoteRun::decl(),
        Hello::decl(),
        Phase::decl(),
        Update::decl(),
        JobError::decl(),
        RunRecord::decl(),
        RunStatus::decl(),
        headroom_store::ledger::RunKind::decl(),
        headroom_core::jobs::JobStatus::decl(),
        headroom_core::jobs::live::SweepSnapshot::decl(),
        headroom_core::jobs::live::SweepForm::decl(),
        crate::error::AppError::decl(),
        crate::error::ErrorCode::decl(),
        headroom_model::protocol::Dtype::decl(),
        headroom_model::protocol::Mode::decl(),
        headroom_model::protocol::Release::decl(),
        headroom_core::jobs::live_memory::MemorySnapshot::decl(),
        headroom_core::jobs::live_memory::ProfileView::decl(),
        headroom_core::jobs::live_memory::NumericsView::decl(),
        headroom_core::jobs::live_memory::NumericsRow::decl(),
        headroom_model::conditions::TimedConditions::decl(),
        headroom_model::conditions::Span::decl(),
        headroom_model::conditions::ThermalState::decl(),
        headroom_model::observed::OpShare::decl(),
        headroom_model::observed::WaitKind::decl(),
        headroom_core::jobs::live_memory::EpochsForm::decl(),
        crate::memory::ProcessInfo::decl(),
        headroom_model::epochs::EpochSample::decl(),
        headroom_model::epochs::EpochVerdict::decl(),
        headroom_model::epochs::EpochVerdictKind::decl(),
        headroom_model::epochs::Trend::decl(),
        headroom_model::samples::MemoryReading::decl(),
        crate::overview::OverviewSnapshot::decl(),
        headroom_decide::Decision::decl(),
        headroom_decide::Column::decl(),
        headroom_decide::Status::decl(),
        headroom_decide::Rule::decl(),
        headroom_decide::Reason::decl(),
        headroom_decide::ColumnVerdict::decl(),
        headroom_decide::Symptom::decl(),
        headroom_probe::contention::ContentionReport::decl(),
        headroom_probe::contention::GroupMemory::decl(),
        headroom_probe::contention::AppMemory::decl(),
        headroom_probe::contention::Group::decl(),
        headroom_probe::contention::SystemSide::decl(),
        headroom_probe::contention::Pressure::decl(),
        headroom_probe::contention::Need::decl(),
        headroom_core::remote::HostProfile::decl(),
        headroom_core::project::Project::decl(),
        headroom_core::remote::check::CheckReport::decl(),
        headroom_core::remote::check::Failure::decl(),
        headroom_core::remote::check::FailureKind::decl(),
        crate::remote::KeyInfo::decl(),
        headroom_core::jobs::migrate::Migration::decl(),
        headroom_core::jobs::migrate::StepResult::decl(),
        headroom_core::jobs::migrate::Step::decl(),
        crate::ledger::Fact::decl(),
        crate::ledger::RunReport::decl(),
        crate::ledger::Comparison::decl(),
        headroom_model::summary::Comparison::decl(),
        headroom_probe::load::PointLoad::decl(),
        headroom_probe::load::AccelUser::decl(),
        headroom_model::protocol::TimedUntil::decl(),
        crate::about::About::decl(),
        crate::settings::Setting::decl(),
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
    // The enums' values, for the forms' option lists and for branching on error codes.
    let list = |name: &str, ty: &str, values: Vec<&str>| {
        let quoted: Vec<String> = values.iter().map(|v| format!("\"{v}\"")).collect();
        format!(
            "export const {name}: readonly {ty}[] = [{}];\n\n",
            quoted.join(", ")
        )
    };
    use headroom_model::protocol::{Dtype, Mode, Release};
    out.push_str(&list(
        "DTYPES",
        "Dtype",
        Dtype::ALL.map(Dtype::as_str).to_vec(),
    ));
    out.push_str(&list("MODES", "Mode", Mode::ALL.map(Mode::as_str).to_vec()));
    out.push_str(&list(
        "RELEASES",
        "Release",
        Release::ALL.map(Release::name).to_vec(),
    ));
    out.push_str(&list(
        "RUN_KINDS",
        "RunKind",
        headroom_store::ledger::RunKind::ALL
            .map(headroom_store::ledger::RunKind::as_str)
            .to_vec(),
    ));
    out.push_str(&list(
        "ERROR_CODES",
        "ErrorCode",
        crate::error::ErrorCode::ALL.map(|c| c.as_str()).to_vec(),
    ));
    out.truncate(out.trim_end().len());
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    #[test]
    fn the_option_lists_are_the_wire_names() {
        use headroom_model::protocol::{Dtype, Mode, Release};
        let wire = |v: serde_json::Value| v.as_str().map(str::to_owned).expect("a string");
        for d in Dtype::ALL {
            assert_eq!(wire(serde_json::json!(d)), d.as_str());
        }
        for m in Mode::ALL {
            assert_eq!(wire(serde_json::json!(m)), m.as_str());
        }
        for r in Release::ALL {
            assert_eq!(wire(serde_json::json!(r)), r.name());
        }
        for c in crate::error::ErrorCode::ALL {
            assert_eq!(wire(serde_json::json!(c)), c.as_str());
        }
        for k in headroom_store::ledger::RunKind::ALL {
            assert_eq!(wire(serde_json::json!(k)), k.as_str());
            assert_eq!(headroom_store::ledger::RunKind::parse(k.as_str()), k);
        }
        assert_eq!(
            headroom_store::ledger::RunKind::parse("from-a-newer-headroom"),
            headroom_store::ledger::RunKind::Other
        );
    }

    /// Two Rust types of one name would be one TypeScript type, and a field typed by the other
    /// would check against the wrong shape (`ts(rename)` tells them apart).
    #[test]
    fn every_declared_type_has_its_own_name() {
        let text = super::typescript();
        let mut names: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("export type "))
            .filter_map(|l| l.split([' ', '<', '=']).next())
            .collect();
        let all = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), all, "a type name is declared twice in ipc.ts");
        // Every type a declaration names is declared.
        for want in ["SpeedComparison", "Comparison", "SweepSnapshot"] {
            assert!(names.contains(&want), "{want}");
        }
    }

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
