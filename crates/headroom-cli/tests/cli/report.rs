//! `ledger export` and `ledger compare` on real runs made here: the HTML stands alone, the SVG
//! parses, the CSV reads back to the recorded points, the Markdown's chart is beside it.

use serde_json::Value;

use crate::common::Home;

fn sweep(home: &Home, budget: &str) -> i64 {
    let v = home.cpu_sweep(&["--batches", "1,4", "--budget", budget, "--steps", "3"]);
    v["run_id"].as_i64().expect("run id")
}

#[test]
fn a_run_exports_as_standalone_html_parsable_svg_csv_and_json() {
    let home = Home::new();
    let id = sweep(&home, "80%");
    let out = home.path().join("reports");
    let o = out.to_str().expect("utf-8");
    for format in ["html", "md", "csv", "json"] {
        let r = home.run(&[
            "ledger",
            "export",
            &id.to_string(),
            "--format",
            format,
            "--out",
            o,
        ]);
        assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    }
    let html = std::fs::read_to_string(out.join(format!("run-{id}.html"))).expect("html");
    assert!(
        html.starts_with("<!DOCTYPE html>") && html.contains("<svg"),
        "inline chart"
    );
    for external in ["src=", "<link", "<script", "url(", "@import"] {
        assert!(!html.contains(external), "{external} in the HTML");
    }
    let http: Vec<&str> = html
        .match_indices("http")
        .map(|(i, _)| &html[i..i + 26])
        .collect();
    assert!(
        http.iter()
            .all(|h| h.starts_with("http://www.w3.org/2000/svg")),
        "only the SVG namespace, never fetched: {http:?}"
    );
    // Where the ledger lives (a temp folder: a local disk or tmpfs) and who held memory.
    assert!(
        html.contains("<th>Headroom folder on</th><td>local: "),
        "{html}"
    );
    assert!(html.contains("<th>apps holding memory</th>"), "{html}");
    assert!(
        html.contains("<th>libtorch</th>") && html.contains("recommend"),
        "facts and recommendation"
    );
    let md = std::fs::read_to_string(out.join(format!("run-{id}.md"))).expect("md");
    assert!(md.contains(&format!("](run-{id}.svg)")), "{md}");
    let svg = std::fs::read_to_string(out.join(format!("run-{id}.svg"))).expect("svg");
    let doc = roxmltree::Document::parse(&svg).expect("the SVG parses as XML");
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    assert!(svg.contains("samples/s") && svg.contains("batch size"));
    // CSV reads back to the points the JSON export holds.
    let json: Value = serde_json::from_str(
        &std::fs::read_to_string(out.join(format!("run-{id}.json"))).expect("json"),
    )
    .expect("json parses");
    let points = json["points"].as_array().expect("points");
    assert_eq!(points.len(), 2);
    let mut rd = csv::Reader::from_path(out.join(format!("run-{id}.csv"))).expect("csv");
    let header = rd.headers().expect("header").clone();
    assert_eq!(&header[0], "batch");
    let rows: Vec<csv::StringRecord> = rd.records().map(|r| r.expect("row")).collect();
    assert_eq!(rows.len(), points.len());
    for (row, p) in rows.iter().zip(points) {
        assert_eq!(row[0].parse::<u64>().ok(), p["batch"].as_u64());
        assert_eq!(&row[1], p["status"].as_str().expect("status"));
        let sps: f64 = row[2].parse().expect("samples/s");
        assert_eq!(Some(sps), p["samples_per_s"].as_f64(), "exact round trip");
    }
    // A run that does not exist is named.
    let r = home.run(&["ledger", "export", "999", "--out", o]);
    assert!(!r.status.success());
    assert!(String::from_utf8_lossy(&r.stderr).contains("no run 999"));
}

#[test]
fn compare_shows_the_figures_at_common_batches_and_the_facts_that_differ() {
    let home = Home::new();
    let a = sweep(&home, "50%");
    let b = sweep(&home, "60%");
    let out = home.run(&["ledger", "compare", &a.to_string(), &b.to_string()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("  batch 1: ") && text.contains("  batch 4: "),
        "{text}"
    );
    assert!(text.contains("samples/s ("), "{text}");
    assert!(text.contains("  budget: "), "the budgets differ: {text}");
    assert!(!text.contains("  libtorch: "), "same libtorch: {text}");
    assert!(
        !text.contains("no conditions recorded"),
        "both runs have theirs: {text}"
    );
}

/// A sysfs tree under `root` with a mains supply (online or not) and a battery.
fn power_supply(root: &std::path::Path, ac: bool, percent: u32) {
    let ps = root.join("sys/class/power_supply");
    let status = if ac { "Charging" } else { "Discharging" };
    let supplies = [
        (
            "AC",
            vec![
                ("type", "Mains".to_owned()),
                ("online", u8::from(ac).to_string()),
            ],
        ),
        (
            "BAT0",
            vec![
                ("type", "Battery".to_owned()),
                ("capacity", percent.to_string()),
                ("status", status.to_owned()),
            ],
        ),
    ];
    for (name, files) in supplies {
        std::fs::create_dir_all(ps.join(name)).expect("supply dir");
        for (f, v) in files {
            std::fs::write(ps.join(name).join(f), format!("{v}\n")).expect("supply file");
        }
    }
}

#[test]
fn a_run_on_ac_against_one_on_battery_names_the_power_state() {
    // This VM has no battery: the runs read a sysfs tree laid out as a laptop's
    // (HEADROOM_SYS_ROOT), once plugged in at 80 %, once on battery at 57 %.
    let home = Home::new();
    let mut ids = Vec::new();
    for (ac, pct) in [(true, 80), (false, 57)] {
        let root = home.path().join(if ac { "sys-ac" } else { "sys-battery" });
        power_supply(&root, ac, pct);
        let out = home
            .cmd(&[
                "sweep",
                "--device",
                "cpu",
                "--batches",
                "1,4",
                "--steps",
                "3",
                "--json",
            ])
            .env("HEADROOM_SYS_ROOT", &root)
            .output()
            .expect("sweep");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: Value = serde_json::from_slice(&out.stdout).expect("sweep JSON");
        ids.push(v["run_id"].as_i64().expect("run id"));
    }
    let out = home.run(&[
        "ledger",
        "compare",
        &ids[0].to_string(),
        &ids[1].to_string(),
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("  power: AC adapter vs battery"), "{text}");
    assert!(
        text.contains("  battery: 80 %, charging vs 57 %, discharging"),
        "{text}"
    );
    // And the report says it.
    let dir = home.path().join("r");
    let d = dir.to_str().expect("utf-8");
    let r = home.run(&[
        "ledger",
        "export",
        &ids[1].to_string(),
        "--format",
        "html",
        "--out",
        d,
    ]);
    assert!(r.status.success());
    let html = std::fs::read_to_string(dir.join(format!("run-{}.html", ids[1]))).expect("html");
    assert!(html.contains("<th>power</th><td>battery</td>"), "{html}");
}
