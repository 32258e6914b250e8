//! The contention tests.

use super::*;

#[test]
fn a_light_sampler_reads_the_process_list_only_when_it_can_matter() {
    let cfg = ContentionConfig::default();
    let read_at = |s: &Sampler| s.last_procs.as_ref().map(|(at, _)| *at);
    let mut s = Sampler::new();
    s.set_light(true);
    // The first sample reads it (nothing to keep yet).
    let first = s.sample(&cfg, &[], None);
    assert!(first.processes > 0);
    let at = read_at(&s).expect("read");
    // Plenty available (no need measured, this test machine far from its reserve): kept.
    let m = crate::sysmem::system_memory().expect("meminfo");
    let reserve = reserve_bytes(m.total, &cfg);
    if m.available > reserve + (1 << 30) {
        let again = s.sample(&cfg, &[], None);
        assert_eq!(read_at(&s), Some(at), "read again while nothing could fire");
        assert_eq!(again.processes, first.processes, "the kept list");
    }
    // A need larger than the memory: short, so the apps could matter: read again.
    let need = Need {
        bytes: m.total,
        source: "a test".into(),
    };
    s.sample(&cfg, &[], Some(need.clone()));
    let short = read_at(&s).expect("read");
    assert!(short > at, "short of memory: read again");
    // Not light (the popover open): read every time.
    s.set_light(false);
    s.sample(&cfg, &[], None);
    assert!(read_at(&s).expect("read") > short);
    // Light again, but the reading too old: read again.
    s.set_light(true);
    s.last_procs = s
        .last_procs
        .take()
        .map(|(at, p)| (at - LIGHT_REFRESH - std::time::Duration::from_secs(1), p));
    let old = read_at(&s).expect("read");
    s.sample(&cfg, &[], None);
    assert!(
        read_at(&s).expect("read") > old,
        "older than a minute: read again"
    );
}

fn p(pid: u32, parent: u32, name: &str, exe: &str, mib: u64) -> Proc {
    Proc {
        pid,
        parent: (parent != 0).then_some(parent),
        name: name.into(),
        exe: (!exe.is_empty()).then(|| exe.into()),
        arg0: None,
        bytes: mib << 20,
    }
}

#[test]
fn names_match_whole_words_at_the_start() {
    assert!(names("Code", "Code Helper (Renderer)"));
    assert!(names("code", "Code"));
    assert!(!names("Code", "Codex"));
    assert!(!names("zoom", "zoom.us"));
    assert!(names("zoom.us", "zoom.us"));
    assert!(!names("", "anything"));
    assert_eq!(
        bundle_name("/Applications/Visual Studio Code.app/Contents/Frameworks/Code Helper (GPU).app/Contents/MacOS/Code Helper (GPU)"),
        Some("Visual Studio Code")
    );
    assert_eq!(bundle_name("/usr/bin/python3"), None);
}

#[test]
fn a_mac_desktop_is_attributed_by_bundle_and_tree() {
    let cfg = ContentionConfig::default();
    let procs = [
        p(1, 0, "launchd", "/sbin/launchd", 20),
        p(100, 1, "zoom.us", "/Applications/zoom.us.app/Contents/MacOS/zoom.us", 900),
        p(101, 100, "CptHost", "/Applications/zoom.us.app/Contents/Frameworks/CptHost.app/Contents/MacOS/CptHost", 300),
        p(200, 1, "Electron", "/Applications/Visual Studio Code.app/Contents/MacOS/Electron", 400),
        p(201, 200, "Code Helper (Renderer)", "/Applications/Visual Studio Code.app/Contents/Frameworks/Code Helper (Renderer).app/Contents/MacOS/Code Helper (Renderer)", 1200),
        p(202, 200, "zsh", "/bin/zsh", 5),
        // A training script started in the IDE's terminal is not the IDE's memory.
        p(203, 202, "python3.11", "/opt/homebrew/bin/python3.11", 6000),
        p(204, 203, "python3.11", "/opt/homebrew/bin/python3.11", 700),
        p(300, 1, "Google Chrome", "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome", 800),
        p(400, 1, "python3.11", "/opt/homebrew/bin/python3.11", 2000),
    ];
    let groups = classify(&procs, &cfg, &[400], None);
    let get = |g: Group| groups.iter().find(|x| x.group == g).expect("group");
    let conf = get(Group::Conferencing);
    assert_eq!((conf.bytes, conf.processes), (1200 << 20, 2));
    assert_eq!(conf.apps[0].name, "zoom.us");
    let ide = get(Group::Ide);
    assert_eq!((ide.bytes, ide.processes), ((400 + 1200 + 5) << 20, 3));
    assert_eq!(ide.apps[0].name, "Visual Studio Code");
    assert_eq!(get(Group::Browser).bytes, 800 << 20);
    let training = get(Group::Training);
    assert_eq!((training.bytes, training.processes), (2000 << 20, 1));
    // The unknown python in the terminal and its worker are "everything else".
    assert_eq!(get(Group::Other).bytes, (20 + 6000 + 700) << 20);
    // Told about it, Headroom counts that run and its data-loader worker as training.
    let groups = classify(&procs, &cfg, &[203], None);
    let training = groups
        .iter()
        .find(|x| x.group == Group::Training)
        .expect("t");
    assert_eq!(training.bytes, 6700 << 20);
}

#[test]
fn headroom_and_what_it_started_are_its_own_group_but_a_training_run_it_started_is_training() {
    let cfg = ContentionConfig::default();
    let mb = |m: u64| m << 20;
    let procs = vec![
        p(500, 1, "headroom-app", "", 150),
        p(501, 500, "WebKitWebProces", "", 120),
        p(502, 500, "WebKitNetworkPr", "", 40),
        // A sweep's worker the app started, and a training run it wraps.
        p(503, 500, "headroom", "", 30),
        p(504, 500, "headroom", "", 20),
        p(505, 504, "python3", "", 3000),
        p(600, 1, "bash", "", 5),
    ];
    let groups = classify(&procs, &cfg, &[505], Some(500));
    let get = |g: Group| {
        groups
            .iter()
            .find(|x| x.group == g)
            .map(|x| (x.bytes, x.processes))
    };
    assert_eq!(
        get(Group::Headroom),
        Some((mb(150 + 120 + 40 + 30 + 20), 5))
    );
    assert_eq!(get(Group::Training), Some((mb(3000), 1)));
    assert_eq!(get(Group::Other), Some((mb(5), 1)));
    // Not told who it is: no Headroom group at all.
    let groups = classify(&procs, &cfg, &[505], None);
    assert!(groups.iter().all(|g| g.group != Group::Headroom));
}

fn system(total_gib: u64, avail_gib: u64, pressure: Option<Pressure>) -> SystemSide {
    SystemSide {
        total_bytes: total_gib << 30,
        available_bytes: avail_gib << 30,
        swap_used_bytes: Some(0),
        pressure,
        pressure_detail: "test".into(),
    }
}

fn held(conf_gib: u64, ide_gib: u64) -> Vec<GroupMemory> {
    [(Group::Conferencing, conf_gib), (Group::Ide, ide_gib)]
        .into_iter()
        .map(|(group, g)| GroupMemory {
            group,
            bytes: g << 30,
            processes: 1,
            apps: Vec::new(),
        })
        .collect()
}

#[test]
fn apps_over_their_share_raise_contention_only_when_the_need_no_longer_fits() {
    let cfg = ContentionConfig::default();
    let need = Need {
        bytes: 6 << 30,
        source: "the last sweep of vit-tiny at batch 64".into(),
    };
    // 10 of 32 GiB (31 %) held, 5 GiB available < 6 GiB needed: raised, with the figures.
    let r = judge(&held(6, 4), &system(32, 5, None), Some(&need), None, &cfg);
    assert_eq!(r.len(), 1, "{r:?}");
    assert!(
        r[0].contains("10.0 GiB (31 % of 32.0 GiB RAM; threshold 25 %)"),
        "{}",
        r[0]
    );
    assert!(
        r[0].contains("below the 6.0 GiB the last sweep of vit-tiny at batch 64 needs plus a 15 % reserve (4.8 GiB)"),
        "{}",
        r[0]
    );
    // Need plus reserve is 10.8 GiB: 10 GiB available is short, 11 GiB is not.
    assert!(!judge(&held(6, 4), &system(32, 10, None), Some(&need), None, &cfg).is_empty());
    assert!(judge(&held(6, 4), &system(32, 11, None), Some(&need), None, &cfg).is_empty());
    // Short on memory but the apps hold under their share: not theirs to blame.
    assert!(judge(&held(2, 2), &system(32, 5, None), Some(&need), None, &cfg).is_empty());
    // No measured need: the floor is 15 % of RAM.
    assert!(!judge(&held(6, 4), &system(32, 4, None), None, None, &cfg).is_empty());
    assert!(judge(&held(6, 4), &system(32, 5, None), None, None, &cfg).is_empty());
}

/// A local LLM server (Ollama's daemon and its runner, LM Studio's app, llama.cpp's server)
/// is a group of its own, and its memory counts with conferencing and IDEs, named.
#[test]
fn local_llm_servers_are_grouped_and_count_toward_contention() {
    let cfg = ContentionConfig::default();
    let procs = [
        p(1, 0, "launchd", "/sbin/launchd", 20),
        p(
            100,
            1,
            "ollama",
            "/Applications/Ollama.app/Contents/Resources/ollama",
            300,
        ),
        p(
            101,
            100,
            "ollama",
            "/Applications/Ollama.app/Contents/Resources/ollama",
            4700,
        ),
        p(
            200,
            1,
            "LM Studio",
            "/Applications/LM Studio.app/Contents/MacOS/LM Studio",
            900,
        ),
        p(
            300,
            1,
            "llama-server",
            "/opt/homebrew/bin/llama-server",
            2100,
        ),
        p(400, 1, "python3.11", "/opt/homebrew/bin/python3.11", 2000),
    ];
    let groups = classify(&procs, &cfg, &[400], None);
    let llm = groups
        .iter()
        .find(|g| g.group == Group::LocalLlm)
        .expect("llm group");
    assert_eq!(
        (llm.bytes, llm.processes),
        ((300 + 4700 + 900 + 2100) << 20, 4)
    );
    assert_eq!(llm.apps[0].name, "Ollama");
    assert_eq!(llm.apps[0].bytes, 5000 << 20);
    let need = Need {
        bytes: 6 << 30,
        source: "run 7 at batch 64".into(),
    };
    // 2 GiB of conferencing and IDEs alone is under the 25 % share of 32 GiB...
    assert!(judge(&held(1, 1), &system(32, 5, None), Some(&need), None, &cfg).is_empty());
    // ...with the LLM servers' 7.8 GiB it is over, and the reason names them.
    let mut with = held(1, 1);
    with.push(llm.clone());
    let r = judge(&with, &system(32, 5, None), Some(&need), None, &cfg);
    assert_eq!(r.len(), 1, "{r:?}");
    assert!(
        r[0].starts_with("conferencing, IDEs and local LLM servers (Ollama 4.9 GiB, llama-server 2.1 GiB, LM Studio 900 MiB) hold 9.8 GiB"),
        "{}",
        r[0]
    );
}

#[test]
fn swap_growth_and_os_pressure_raise_it_on_their_own() {
    let cfg = ContentionConfig::default();
    let calm = system(32, 20, Some(Pressure::Normal));
    assert!(judge(&[], &calm, None, Some((256 << 20) - 1), &cfg).is_empty());
    let r = judge(&[], &calm, None, Some(256 << 20), &cfg);
    assert!(r[0].contains("swap grew by 256 MiB"), "{r:?}");
    let r = judge(
        &[],
        &system(32, 20, Some(Pressure::Critical)),
        None,
        None,
        &cfg,
    );
    assert!(r[0].contains("critical memory pressure (test)"), "{r:?}");
}

fn fixture(name: &str) -> String {
    let path = format!(
        "{}/../headroom-core/tests/fixtures/macos/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).expect(&path);
    // The first line of each fixture names its source.
    text.lines().skip(1).collect::<Vec<_>>().join("\n")
}

#[test]
fn macos_pressure_and_swap_from_real_output() {
    let levels = fixture("sysctl_memorystatus_vm_pressure_level_light_vs_heavy.txt");
    let blocks: Vec<&str> = levels.split("\n\n").collect();
    assert_eq!(
        parse_vm_pressure_level(blocks[0]),
        Some((Pressure::Normal, 1))
    );
    assert_eq!(
        parse_vm_pressure_level(blocks[1]),
        Some((Pressure::Critical, 4))
    );
    assert_eq!(parse_vm_pressure_level("2\n"), Some((Pressure::Warn, 2)));
    assert_eq!(parse_vm_pressure_level("vm.memory_pressure: 0\n"), None);
    assert_eq!(
        parse_memory_pressure_free(&fixture("memory_pressure_32gb_86pct.txt")),
        Some(86)
    );
    let used = parse_swapusage_used(&fixture("sysctl_n_vm_swapusage_48gb.txt"));
    assert_eq!(used, Some((4259.25 * 1_048_576.0_f64) as u64));
}

#[test]
fn linux_psi_and_swap() {
    let psi = parse_psi("some avg10=12.50 avg60=3.00 avg300=1.00 total=123\nfull avg10=6.25 avg60=0.00 avg300=0.00 total=5\n").expect("psi");
    assert_eq!(
        psi,
        Psi {
            some_avg10: 12.5,
            full_avg10: 6.25
        }
    );
    let cfg = ContentionConfig::default();
    assert_eq!(psi_pressure(psi, &cfg), Pressure::Critical);
    assert_eq!(
        psi_pressure(
            Psi {
                some_avg10: 10.0,
                full_avg10: 4.99
            },
            &cfg
        ),
        Pressure::Warn
    );
    assert_eq!(
        psi_pressure(
            Psi {
                some_avg10: 9.99,
                full_avg10: 0.0
            },
            &cfg
        ),
        Pressure::Normal
    );
    assert_eq!(parse_psi("garbage"), None);
    let meminfo = "MemTotal: 100 kB\nSwapTotal:  2097148 kB\nSwapFree:   1048574 kB\n";
    assert_eq!(parse_meminfo_swap_used(meminfo), Some(1_048_574 * 1024));
}

#[test]
fn this_machine_samples_itself() {
    if !cfg!(target_os = "linux") {
        return;
    }
    let mut s = Sampler::new();
    let r = s.sample(&ContentionConfig::default(), &[std::process::id()], None);
    assert!(r.processes > 1);
    assert!(r.system.total_bytes > 0);
    assert!(
        r.bytes(Group::Training) > 0,
        "this test process is the training run"
    );
    let again = s.sample(&ContentionConfig::default(), &[], None);
    assert!(again.swap_growth_bytes.is_some());
}

/// Headroom's own processes are charged their share (PSS here) where it can be read, the rest
/// their resident bytes; the training run under the app stays the training run's.
#[test]
fn headroom_is_charged_its_share_of_shared_pages() {
    let cfg = ContentionConfig::default();
    let procs = vec![
        p(500, 1, "headroom-app", "", 150),
        p(501, 500, "WebKitWebProces", "", 120),
        p(504, 500, "headroom", "", 20),
        p(505, 504, "python3", "", 3000),
    ];
    let share = |pid: u32| match pid {
        500 => Some(90 << 20),
        501 => Some(40 << 20),
        505 => Some(1),
        _ => None,
    };
    let groups = classify_with(&procs, &cfg, &[505], Some(500), &share);
    let get = |g: Group| groups.iter().find(|x| x.group == g).map(|x| x.bytes);
    assert_eq!(get(Group::Headroom), Some((90 + 40 + 20) << 20));
    assert_eq!(get(Group::Training), Some(3000 << 20));
}

/// On this machine: the sampling process is in Headroom's group at its PSS, which is below the
/// resident bytes sysinfo reports for it. PSS divides shared pages among the processes mapping
/// them, so it moves whenever sibling test processes of this same binary start or end — even
/// between two readings taken either side of the sample (a CI run saw 1.7 MB charged between
/// readings of 2.3 and 2.4 MB). What no sibling can move: PSS lies between the pages this process
/// alone maps (private) and all it maps (RSS), and sits below RSS as soon as any page is shared.
/// So the charge must lie in that band, and below RSS by a margin that RSS itself would not meet.
#[cfg(target_os = "linux")]
#[test]
fn a_real_sample_charges_this_process_its_pss() {
    fn private_bytes(pid: u32) -> u64 {
        let text =
            std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).expect("smaps_rollup");
        text.lines()
            .filter(|l| l.starts_with("Private_Clean:") || l.starts_with("Private_Dirty:"))
            .map(|l| {
                l.split_whitespace()
                    .nth(1)
                    .and_then(|k| k.parse::<u64>().ok())
                    .expect("kB")
                    * 1024
            })
            .sum()
    }
    let me = std::process::id();
    let mut s = Sampler::new();
    let mut last = String::new();
    for _ in 0..20 {
        let private = private_bytes(me);
        let r = s.sample(&ContentionConfig::default(), &[], None);
        let rss = crate::sysmem::pid_rss(me).expect("our own RSS");
        let own = r
            .groups
            .iter()
            .find(|g| g.group == Group::Headroom)
            .expect("this process is Headroom's own")
            .bytes;
        // The band is only telling when this process shares a fair part of what it maps.
        if private as f64 > rss as f64 * 0.9 {
            last = format!("private {private} too close to RSS {rss} to tell PSS from RSS");
            continue;
        }
        assert!(
            own as f64 >= private as f64 * 0.95 && (own as f64) < rss as f64 * 0.97,
            "charged {own}: not between this process's private bytes {private} and its RSS {rss}"
        );
        return;
    }
    panic!("nothing to compare with: {last}");
}

#[test]
fn the_tray_that_started_the_popover_is_the_root_of_headrooms_own_group() {
    use super::own_root_from;
    assert_eq!(own_root_from(None, 10, 20), 20);
    assert_eq!(
        own_root_from(Some("10"), 10, 20),
        10,
        "the tray is the parent"
    );
    assert_eq!(
        own_root_from(Some("11"), 10, 20),
        20,
        "inherited further down"
    );
    assert_eq!(own_root_from(Some("tray"), 10, 20), 20);
    assert_eq!(own_root_from(Some("1"), 1, 20), 20, "init is nobody's tray");
}
