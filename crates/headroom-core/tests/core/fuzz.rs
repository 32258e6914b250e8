//! The fuzz targets on stable: every file of the kept corpus (`fuzz/corpus/<target>/`) and every
//! captured fixture goes through every target, then a seeded mutation loop (bit flips, byte
//! inserts and deletes, splices of two seeds, runs of digits and separators) runs
//! `HEADROOM_FUZZ_ITERS` inputs per target (2000 by default; `bash fuzz/run.sh` runs the
//! coverage-guided cargo-fuzz targets for long). A panic names the target and writes the input to
//! `target/fuzz-crashes/`.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use headroom_core::fuzzing::{run, TARGETS};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            files_under(&p, out);
        } else {
            out.push(p);
        }
    }
}

fn seeds() -> Vec<(String, Vec<u8>)> {
    let mut paths = Vec::new();
    files_under(&repo().join("fuzz/corpus"), &mut paths);
    files_under(
        &repo().join("crates/headroom-core/tests/fixtures"),
        &mut paths,
    );
    paths.sort();
    paths
        .into_iter()
        .filter_map(|p| Some((p.display().to_string(), std::fs::read(&p).ok()?)))
        .collect()
}

/// xorshift64*: a seeded, dependency-free generator, so a failure reproduces.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % (n.max(1) as u64)).unwrap_or(0)
    }
}

const TOKENS: [&[u8]; 14] = [
    b"\0",
    b"\n",
    b"\r\n",
    b":",
    b"=",
    b"\"",
    b" ",
    b"-1",
    b"18446744073709551616",
    b"1e309",
    b"NaN",
    b"{\"event\":\"point\"}",
    b"Host ",
    b"\xff\xfe",
];

fn mutate(rng: &mut Rng, seeds: &[(String, Vec<u8>)]) -> Vec<u8> {
    let mut v = seeds[rng.below(seeds.len())].1.clone();
    for _ in 0..=rng.below(8) {
        match rng.below(6) {
            0 if !v.is_empty() => {
                let i = rng.below(v.len());
                v[i] ^= 1 << rng.below(8);
            }
            1 => {
                let i = rng.below(v.len() + 1);
                v.insert(i, u8::try_from(rng.below(256)).unwrap_or(0));
            }
            2 if !v.is_empty() => {
                let i = rng.below(v.len());
                let n = rng.below(v.len() - i + 1).min(64);
                v.drain(i..i + n);
            }
            3 => {
                let other = &seeds[rng.below(seeds.len())].1;
                let cut = rng.below(v.len() + 1);
                let from = rng.below(other.len() + 1);
                v.truncate(cut);
                v.extend_from_slice(&other[from..]);
            }
            4 => {
                let i = rng.below(v.len() + 1);
                let t = TOKENS[rng.below(TOKENS.len())];
                v.splice(i..i, t.iter().copied());
            }
            _ => {
                let i = rng.below(v.len() + 1);
                let digits: Vec<u8> = (0..rng.below(24))
                    .map(|_| b'0' + (rng.below(10) as u8))
                    .collect();
                v.splice(i..i, digits);
            }
        }
    }
    v
}

fn check(target: &str, what: &str, data: &[u8]) {
    let r = catch_unwind(AssertUnwindSafe(|| run(target, data)));
    match r {
        Ok(known) => assert!(known, "unknown fuzz target {target}"),
        Err(e) => {
            let dir = repo().join("target/fuzz-crashes");
            let _ = std::fs::create_dir_all(&dir);
            let file = dir.join(format!("{target}-{}", data.len()));
            let _ = std::fs::write(&file, data);
            let msg = e
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_default();
            panic!(
                "fuzz target {target} panicked on {what} (saved to {}): {msg}",
                file.display()
            );
        }
    }
}

#[test]
fn every_target_survives_the_corpus_the_fixtures_and_seeded_mutations() {
    let seeds = seeds();
    assert!(
        seeds.len() > 40,
        "the corpus and fixtures were not found: {}",
        seeds.len()
    );
    for (name, data) in &seeds {
        for t in TARGETS {
            check(t, name, data);
        }
    }
    let iters: usize = std::env::var("HEADROOM_FUZZ_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    for (k, t) in TARGETS.iter().enumerate() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (k as u64 + 1));
        for i in 0..iters {
            let input = mutate(&mut rng, &seeds);
            check(t, &format!("mutation {i}"), &input);
        }
    }
}

#[test]
fn the_sshconfig_target_really_checks_rendered_profiles() {
    // A valid profile passes; the check itself is live: a host carrying a newline and a directive
    // (which validation refuses, so the target never renders it) fails the block check.
    headroom_core::fuzzing::ssh_config(
        b"m4\x00203.0.113.7\x002222\x00ada\x00/Users/ada/.ssh/id\x00ops@bastion:22",
    );
    let p = headroom_core::remote::HostProfile::new("m4", "h\n    ProxyCommand sh");
    assert!(p.validate().is_err());
    let caught = catch_unwind(AssertUnwindSafe(|| headroom_core::fuzzing::one_block(&p)));
    assert!(
        caught.is_err(),
        "an injected ProxyCommand line was not caught"
    );
}
