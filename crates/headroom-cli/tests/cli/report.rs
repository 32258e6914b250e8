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
        html.contains("<th>libtorch</th>") && html.contains("<strong>Recommendation</strong>: "),
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

/// Decodes the PNG at `path` to its last pixel; its size, and how many of its pixels are dark
/// (text and axes drawn with a real font, not a blank picture).
fn decode_png(path: &std::path::Path) -> ((u32, u32), usize) {
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut reader = png::Decoder::new(std::io::BufReader::new(file))
        .read_info()
        .expect("a PNG header");
    let mut buf = vec![0; reader.output_buffer_size().expect("size")];
    let info = reader.next_frame(&mut buf).expect("the whole PNG decodes");
    let channels = info.color_type.samples();
    let dark = buf[..info.buffer_size()]
        .chunks(channels)
        .filter(|px| px[..3].iter().all(|&c| c < 110))
        .count();
    ((info.width, info.height), dark)
}

/// The width and height an SVG file declares.
fn svg_size(path: &std::path::Path) -> (u32, u32) {
    let text = std::fs::read_to_string(path).expect("svg");
    let doc = roxmltree::Document::parse(&text).expect("the SVG parses");
    let root = doc.root_element();
    let n = |a: &str| root.attribute(a).and_then(|v| v.parse().ok()).expect(a);
    (n("width"), n("height"))
}

#[test]
fn sweeps_epochs_and_runs_side_by_side_come_as_svg_and_png() {
    let home = Home::new();
    let a = sweep(&home, "80%");
    let b = sweep(&home, "60%");
    let e = crate::epochs::epochs(&home, &["--leak-demo", "16"])["run_id"]
        .as_i64()
        .expect("epochs run id");
    let out = home.path().join("pictures");
    let o = out.to_str().expect("utf-8");
    let ids = [a.to_string(), b.to_string(), e.to_string()];
    let r = home.run(&[
        "ledger", "export", &ids[0], &ids[1], &ids[2], "--format", "md", "--out", o,
    ]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let listed = String::from_utf8_lossy(&r.stdout).to_string();
    for base in [
        format!("run-{a}"),
        format!("run-{b}"),
        format!("run-{e}-memory"),
        format!("compare-{a}-{b}"),
    ] {
        let svg = out.join(format!("{base}.svg"));
        let png = out.join(format!("{base}.png"));
        assert!(listed.contains(&format!("{base}.png")), "{listed}");
        let (w, h) = svg_size(&svg);
        let (size, dark) = decode_png(&png);
        assert_eq!(
            size,
            (2 * w, 2 * h),
            "{base}: the PNG is the SVG at twice the size"
        );
        assert!(
            dark > 2_000,
            "{base}: {dark} dark pixels, the labels are missing"
        );
    }
    // The side-by-side picture names both runs; the epochs run's has the threshold line.
    let both = std::fs::read_to_string(out.join(format!("compare-{a}-{b}.svg"))).expect("svg");
    assert!(both.contains(&format!("run {a} · ")) && both.contains(&format!("run {b} · ")));
    let mem = std::fs::read_to_string(out.join(format!("run-{e}-memory.svg"))).expect("svg");
    assert!(mem.contains("leak threshold") && mem.contains("memory per epoch"));
    let md = std::fs::read_to_string(out.join(format!("run-{e}.md"))).expect("md");
    assert!(
        md.contains(&format!(
            "](run-{e}-memory.svg) ([PNG](run-{e}-memory.png))"
        )),
        "{md}"
    );
    // The pictures alone, and a compare chart drawn into a file of either kind.
    let r = home.run(&[
        "ledger",
        "export",
        &ids[2],
        "--format",
        "png",
        "--out",
        &format!("{o}/only"),
    ]);
    assert!(r.status.success());
    assert!(out.join(format!("only/run-{e}-memory.png")).is_file());
    let chart = out.join("ab.png");
    let r = home.run(&[
        "ledger",
        "compare",
        &ids[0],
        &ids[1],
        "--chart",
        chart.to_str().expect("utf-8"),
    ]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    assert_eq!(decode_png(&chart).0, (1440, 1120));
    // A run without points cannot be drawn against another, and a chart needs a known kind.
    let r = home.run(&[
        "ledger",
        "compare",
        &ids[0],
        &ids[2],
        "--chart",
        chart.to_str().expect("utf-8"),
    ]);
    assert!(!r.status.success());
    assert!(String::from_utf8_lossy(&r.stderr).contains("has no points to draw"));
    let r = home.run(&[
        "ledger",
        "compare",
        &ids[0],
        &ids[1],
        "--chart",
        &format!("{o}/x.gif"),
    ]);
    assert!(String::from_utf8_lossy(&r.stderr).contains(".svg or .png"));
}

#[test]
fn dataset_checksums_are_recorded_cached_and_compared() {
    let home = Home::new();
    let data = home.path().join("data");
    std::fs::create_dir_all(data.join("train")).expect("data dir");
    std::fs::write(data.join("abc.txt"), b"abc").expect("file");
    let shard = data.join("train/shard-0.bin");
    std::fs::write(&shard, vec![7u8; 3 << 20]).expect("shard");
    let d = data.to_str().expect("utf-8");
    let recorded = |extra: &[&str]| -> (i64, Value) {
        let mut args = vec!["--batches", "1,4", "--steps", "3", "--data", d];
        args.extend_from_slice(extra);
        let id = home.cpu_sweep(&args)["run_id"].as_i64().expect("run id");
        let dir = home.path().join(format!("export-{id}"));
        let r = home.run(&[
            "ledger",
            "export",
            &id.to_string(),
            "--format",
            "json",
            "--out",
            dir.to_str().expect("utf-8"),
        ]);
        assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
        let doc: Value = serde_json::from_str(
            &std::fs::read_to_string(dir.join(format!("run-{id}.json"))).expect("json"),
        )
        .expect("json parses");
        (id, doc["recorded"].clone())
    };
    let (first, rec) = recorded(&[]);
    let shards = rec["data"]["shards"].as_array().expect("data recorded");
    assert_eq!(shards.len(), 2, "{rec}");
    // FIPS 180-2's "abc", and a fresh read the first time.
    assert_eq!(
        shards[0]["sha256"],
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
    assert!(shards.iter().all(|s| s["cached"] == false));
    assert_eq!(shards[1]["bytes"], 3 << 20);
    // The mount the data is on (the temp folder's: a local disk or tmpfs here).
    assert_eq!(rec["data"]["mounts"][0]["class"], "local", "{rec}");
    // The Python a researcher would use, with its torch (this venv's, found by discovery).
    assert!(
        rec["context"]["python"]["torch"]
            .as_str()
            .is_some_and(|v| v.starts_with("2.")),
        "{}",
        rec["context"]
    );
    // Unchanged files come from the cache.
    let (second, rec) = recorded(&[]);
    assert!(
        rec["data"]["shards"]
            .as_array()
            .expect("data")
            .iter()
            .all(|s| s["cached"] == true),
        "{rec}"
    );
    // A changed shard is read again and the comparison names the data.
    std::fs::write(&shard, vec![8u8; 3 << 20]).expect("shard");
    let future = std::time::SystemTime::now() + std::time::Duration::from_secs(5);
    std::fs::File::options()
        .write(true)
        .open(&shard)
        .expect("open")
        .set_modified(future)
        .expect("mtime");
    let (third, rec) = recorded(&[]);
    let shards = rec["data"]["shards"].as_array().expect("data");
    assert_eq!(shards[1]["cached"], false);
    assert_eq!(shards[0]["cached"], true);
    let text = |a: i64, b: i64| {
        String::from_utf8_lossy(
            &home
                .run(&["ledger", "compare", &a.to_string(), &b.to_string()])
                .stdout,
        )
        .to_string()
    };
    assert!(!text(first, second).contains("  data: "), "same data");
    let diff = text(second, third);
    assert!(
        diff.contains("  data: 2 files, 3.0 MiB, set sha256 "),
        "{diff}"
    );
    // The report lists every file with its checksum.
    let dir = home.path().join("md");
    let r = home.run(&[
        "ledger",
        "export",
        &third.to_string(),
        "--format",
        "md",
        "--out",
        dir.to_str().expect("utf-8"),
    ]);
    assert!(r.status.success());
    let md = std::fs::read_to_string(dir.join(format!("run-{third}.md"))).expect("md");
    assert!(md.contains("| data file | size | sha256 |"), "{md}");
    assert!(
        md.contains(
            "abc.txt | 3 B | ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad |"
        ),
        "{md}"
    );
    // A path that is not there: refused before anything runs, naming it.
    let before = home.runs().len();
    let out = home.run(&[
        "sweep",
        "--device",
        "cpu",
        "--batches",
        "1",
        "--data",
        "/no/such/shard",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("/no/such/shard") && err.contains("--data"),
        "{err}"
    );
    assert_eq!(home.runs().len(), before, "nothing recorded");
}
