//! Watching a training process from outside: its memory (the process and its whole tree, from
//! /proc on Linux), epoch boundaries found in its output, the operators PyTorch says fall back to
//! the CPU on MPS, and the batch size named on its command line. Parsers are pure.

pub use headroom_model::failure::fallback_op;
use regex::Regex;

use crate::CoreError;

/// The default epoch pattern: `epoch 3`, `Epoch: 3`, `epoch #3`, `Epoch 3/10`.
pub const DEFAULT_EPOCH_PATTERN: &str = r"(?i)\bepoch\s*[:#]?\s*(\d+)";

/// Finds epoch numbers in output lines.
#[derive(Debug, Clone)]
pub struct EpochMatcher {
    re: Regex,
    given: bool,
}

impl EpochMatcher {
    /// A matcher for `pattern`, whose first capture group is the epoch number.
    pub fn new(pattern: &str) -> Result<Self, CoreError> {
        let re = Regex::new(pattern).map_err(|e| {
            CoreError::InvalidInput(format!("the epoch pattern {pattern:?} is not a regex: {e}"))
        })?;
        if re.captures_len() < 2 {
            return Err(CoreError::InvalidInput(format!(
                "the epoch pattern {pattern:?} needs a group around the epoch number, e.g. epoch (\\d+)"
            )));
        }
        Ok(Self { re, given: false })
    }

    /// The same matcher, marked as the user's own pattern (`--epoch-regex`): it then decides the
    /// epochs even where Headroom's observer reports its own.
    #[must_use]
    pub fn given(self) -> Self {
        Self {
            given: true,
            ..self
        }
    }

    /// Whether the user gave the pattern.
    pub fn is_given(&self) -> bool {
        self.given
    }

    /// The epoch number a line announces, if any.
    pub fn epoch(&self, line: &str) -> Option<u32> {
        self.re.captures(line)?.get(1)?.as_str().parse().ok()
    }

    /// The epoch a line names and what the line says of it ([`LineKind`]).
    pub fn read(&self, line: &str) -> Option<(u32, LineKind)> {
        let c = self.re.captures(line)?;
        let n = c.get(1)?.as_str().parse().ok()?;
        let whole = c.get(0)?;
        let rest = format!("{} {}", &line[..whole.start()], &line[whole.end()..]);
        Some((n, line_kind(&line[..whole.start()], &rest)))
    }
}

/// What a line that names an epoch says of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineKind {
    /// Its count starts or goes on: a header (`Epoch 2/10` alone) or a progress line with a
    /// position inside the epoch (`| epoch 1 | 20/84 batches`, `Epoch 0: 45%|…| 9/20`).
    Progress,
    /// It ended: `end of epoch 1 | time: 21.4s`, `epoch 3 done`, or a line that reports on
    /// the epoch with no position inside it (`epoch 3 loss 0.21`).
    End,
}

fn line_kind(before: &str, rest: &str) -> LineKind {
    use std::sync::LazyLock;
    static ENDS: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)\b(end|ended|done|finished|complete|completed|summary)\b").expect("regex")
    });
    static INSIDE: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(
            r"(?i)(\d+\s*/\s*\d+|\d+(\.\d+)?\s*%|\b(batch|batches|step|steps|iter|iters|iteration|it)\b\s*[:#=]?\s*\d+|\d+\s*(batches|steps|iterations|iters)\b)",
        )
        .expect("regex")
    });
    // The epoch's own total ("Epoch 3/10") is no position inside it.
    let rest_after = rest.trim_start();
    let rest_after = rest_after
        .strip_prefix('/')
        .map(|r| r.trim_start_matches(|c: char| c.is_ascii_digit() || c == ' '))
        .unwrap_or(rest_after);
    if ENDS.is_match(before) || ENDS.is_match(rest_after) {
        return LineKind::End;
    }
    if INSIDE.is_match(rest_after) {
        return LineKind::Progress;
    }
    if !rest_after.chars().any(char::is_alphanumeric) {
        return LineKind::Progress;
    }
    LineKind::End
}

/// Epoch boundaries read from a command's output lines, in order. An epoch ends at the line
/// that says it ended, or at the line that starts the next epoch's count — never at the first
/// line of its own count — and the last one, when the command ends, with the command.
#[derive(Debug, Clone, Default)]
pub struct LineEpochs {
    /// The epoch whose count is under way.
    current: Option<u32>,
    /// When the epoch under way began (seconds; the first begins where the caller says).
    since: Option<f64>,
    /// The last epoch that ended: a later line naming it again is no boundary.
    ended: Option<u32>,
}

impl LineEpochs {
    /// Reads one line that came `at` seconds into the run; the epoch it ended, with when that
    /// epoch began (none: the first, whose start the caller knows better).
    pub fn line(
        &mut self,
        matcher: &EpochMatcher,
        line: &str,
        at: f64,
    ) -> Option<(u32, Option<f64>)> {
        let (n, kind) = matcher.read(line)?;
        if self.ended == Some(n) {
            return None;
        }
        match kind {
            LineKind::End => {
                let since = self.since;
                self.ended = Some(n);
                self.current = None;
                self.since = Some(at);
                Some((n, since))
            }
            LineKind::Progress => match self.current {
                Some(c) if c == n => None,
                Some(c) => {
                    let since = self.since;
                    self.ended = Some(c);
                    self.current = Some(n);
                    self.since = Some(at);
                    Some((c, since))
                }
                None => {
                    self.current = Some(n);
                    None
                }
            },
        }
    }

    /// The command ended: the epoch still counting ends with it (with when it began).
    pub fn finish(&mut self) -> Option<(u32, Option<f64>)> {
        let c = self.current.take()?;
        self.ended = Some(c);
        Some((c, self.since))
    }
}

/// One MPS operation's GPU time from PyTorch's MPS profiler log (`PYTORCH_MPS_LOG_PROFILE_INFO`
/// with `OPERATION_INFO` and `INCLUDE_GPU_TIME`), e.g.
/// `aten::copy_cast_mps:b8[2]:i32[2] (id=G4, run=1, gpu=0.010 ms, cpu=2.769 ms, mem=1.01 MB)`
/// → (`aten::copy_cast_mps`, 0.010). The operator is the name before its first single `:`.
pub fn mps_op_gpu_ms(line: &str) -> Option<(String, f64)> {
    let line = line.trim();
    let (head, meta) = line.split_once(" (id=")?;
    let at = meta.find("gpu=").or_else(|| meta.find("GPU="))? + 4;
    let ms: f64 = meta[at..]
        .split_whitespace()
        .next()?
        .trim_end_matches(',')
        .parse()
        .ok()?;
    let b = head.as_bytes();
    let end = (0..b.len())
        .find(|&i| b[i] == b':' && b.get(i + 1) != Some(&b':') && (i == 0 || b[i - 1] != b':'))
        .unwrap_or(b.len());
    let name = head[..end].trim();
    (!name.is_empty() && ms >= 0.0).then(|| (name.to_owned(), ms))
}

/// The batch size named in a command line: `--batch-size 64`, `--batch_size=64`, `--bs 64`,
/// `-b 64`, `--batch 64`.
pub fn batch_from_args(args: &[String]) -> Option<u32> {
    const NAMES: &[&str] = &[
        "--batch-size",
        "--batch_size",
        "--batchsize",
        "--bs",
        "--batch",
        "-b",
    ];
    let mut it = args.iter().peekable();
    while let Some(a) = it.next() {
        if let Some((k, v)) = a.split_once('=') {
            if NAMES.contains(&k) {
                return v.parse().ok();
            }
        } else if NAMES.contains(&a.as_str()) {
            return it.peek().and_then(|v| v.parse().ok());
        }
    }
    None
}

/// `pid` and all its descendants (Linux: from /proc/*/task/*/children).
pub fn process_tree(pid: u32) -> Vec<u32> {
    tree_above(pid, None)
}

/// `root` and its descendants, without those of `stop` (which is kept itself).
fn tree_above(root: u32, stop: Option<u32>) -> Vec<u32> {
    let mut out = vec![root];
    let mut i = 0;
    while i < out.len() {
        let p = out[i];
        i += 1;
        if Some(p) == stop {
            continue;
        }
        if let Ok(tasks) = std::fs::read_dir(format!("/proc/{p}/task")) {
            for t in tasks.flatten() {
                if let Ok(text) = std::fs::read_to_string(t.path().join("children")) {
                    out.extend(
                        text.split_whitespace()
                            .filter_map(|c| c.parse::<u32>().ok()),
                    );
                }
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// The resident bytes of `root`'s tree without the descendants of `trainer` (which is `root` or
/// in its tree): what the training holds at an epoch's end when its DataLoader starts its
/// workers again at every pass. Whether those workers are counted then is a matter of a few
/// milliseconds (the last pass's are exiting, the next pass's forking with every page of their
/// parent resident), so two workers' copy of torch would read as a leak. `None` once `root` is
/// gone.
pub fn tree_bytes_without_workers(root: u32, trainer: u32) -> Option<u64> {
    let own = crate::sysmem::pid_rss(root)?;
    let rest: u64 = tree_above(root, Some(trainer))
        .into_iter()
        .filter(|p| *p != root)
        .filter_map(crate::sysmem::pid_rss)
        .sum();
    Some(own + rest)
}

pub use headroom_model::samples::MemoryReading;

/// Reads `pid`'s memory and its tree's; `None` once the process is gone.
pub fn read_memory(pid: u32, t: f64) -> Option<MemoryReading> {
    let (own, peak) = crate::sysmem::pid_rss_and_peak(pid)?;
    // Each process of the tree with its resident bytes and its PSS. A descendant that ended
    // between the listing and its reads (a DataLoader worker at a pass's end, a subprocess) is
    // left out, rather than costing the whole tree its PSS.
    let mut tree: Vec<(u32, u64, Option<u64>)> = Vec::new();
    for p in process_tree(pid) {
        let rss = if p == pid {
            own
        } else {
            match crate::sysmem::pid_rss(p) {
                Some(v) => v,
                None => continue,
            }
        };
        let pss = crate::sysmem::pid_pss(p);
        if pss.is_none() && p != pid && crate::sysmem::pid_rss(p).is_none() {
            continue;
        }
        tree.push((p, rss, pss));
    }
    let tree_bytes: u64 = tree.iter().map(|(_, rss, _)| rss).sum();
    let tree_pss: Option<u64> = tree.iter().map(|(_, _, pss)| *pss).sum();
    let children_bytes = (tree.len() > 1).then(|| {
        let others = tree.iter().filter(|(p, _, _)| *p != pid);
        match others.clone().map(|(_, _, pss)| *pss).sum::<Option<u64>>() {
            Some(pss) if tree_pss.is_some() => pss,
            _ => others.map(|(_, rss, _)| rss).sum(),
        }
    });
    Some(MemoryReading {
        t,
        process_bytes: own,
        tree_bytes,
        tree_pss_bytes: tree_pss,
        processes: u32::try_from(tree.len()).unwrap_or(u32::MAX),
        children_bytes,
        process_peak_bytes: peak,
    })
}

/// The memory of `pid`'s descendants (PSS where the OS gives it, else resident bytes) and how
/// many they are; `None` when it has none (or is gone). For a trainer that is not the process
/// Headroom started (a notebook's kernel under Jupyter, a script under a shell), so that its
/// DataLoader workers are weighed, not the kernel beside them.
pub fn children_memory(pid: u32) -> Option<(u64, u32)> {
    let tree = process_tree(pid);
    let children = &tree[1..];
    if children.is_empty() {
        return None;
    }
    let bytes = children
        .iter()
        .filter_map(|p| crate::sysmem::pid_pss(*p).or_else(|| crate::sysmem::pid_rss(*p)))
        .sum();
    Some((bytes, u32::try_from(children.len()).unwrap_or(u32::MAX)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epochs_in_common_log_lines() {
        let m = EpochMatcher::new(DEFAULT_EPOCH_PATTERN).expect("pattern");
        assert_eq!(m.epoch("Epoch 3/10: loss 0.31"), Some(3));
        assert_eq!(m.epoch("epoch: 12 train_loss=0.1"), Some(12));
        assert_eq!(m.epoch("[epoch #7] done"), Some(7));
        assert_eq!(m.epoch("epochs to run: none"), None);
        assert_eq!(m.epoch("step 400 loss 0.2"), None);
        assert_eq!(
            m.read("| epoch   1 |    20/   84 batches | ms/batch 12.1"),
            Some((1, LineKind::Progress))
        );
        assert_eq!(
            m.read("| end of epoch   1 | time: 21.40s | valid loss  5.8"),
            Some((1, LineKind::End))
        );
        assert_eq!(m.read("Epoch 3/10: loss 0.31"), Some((3, LineKind::End)));
        assert_eq!(m.read("Epoch 2/10"), Some((2, LineKind::Progress)));
        assert_eq!(
            m.read("Epoch 0:  45%|####5     | 9/20 [00:01<00:01]"),
            Some((0, LineKind::Progress))
        );
        assert_eq!(m.read("[epoch #7] done"), Some((7, LineKind::End)));
        assert_eq!(
            m.read("epoch 4 step 300 loss 0.2"),
            Some((4, LineKind::Progress))
        );
        let custom = EpochMatcher::new(r"^== round (\d+) ==$").expect("pattern");
        assert_eq!(custom.epoch("== round 4 =="), Some(4));
        assert!(EpochMatcher::new("epoch \\d+").is_err(), "needs a group");
        assert!(EpochMatcher::new("epoch (").is_err());
    }

    /// Issue 38: progress lines that name their epoch while it runs end the epoch before at
    /// the first line of the next count, an "end of epoch" line ends its own, and the last
    /// ends with the command.
    #[test]
    fn epochs_from_progress_lines_end_where_the_next_count_starts() {
        let m = EpochMatcher::new(DEFAULT_EPOCH_PATTERN).expect("pattern");
        let mut e = LineEpochs::default();
        let lines = [
            (5.0, "| epoch 1 | 20/84 batches | ms/batch 10"),
            (9.0, "| epoch 1 | 40/84 batches | ms/batch 10"),
            (14.0, "| epoch 2 | 20/84 batches | ms/batch 10"),
            (18.0, "| epoch 2 | 40/84 batches | ms/batch 10"),
            (23.0, "| epoch 3 | 20/84 batches | ms/batch 10"),
        ];
        let ends: Vec<_> = lines
            .iter()
            .filter_map(|(at, l)| e.line(&m, l, *at))
            .collect();
        assert_eq!(ends, [(1, None), (2, Some(14.0))]);
        assert_eq!(e.finish(), Some((3, Some(23.0))));
        assert_eq!(e.finish(), None);
        // With "end of epoch" lines, each ends there; a later line naming it is no boundary.
        let mut e = LineEpochs::default();
        let lines = [
            (5.0, "| epoch 1 | 20/84 batches"),
            (10.0, "| end of epoch 1 | time: 9.5s"),
            (10.1, "epoch 1 saved"),
            (15.0, "| epoch 2 | 20/84 batches"),
            (20.0, "| end of epoch 2 | time: 9.9s"),
        ];
        let ends: Vec<_> = lines
            .iter()
            .filter_map(|(at, l)| e.line(&m, l, *at))
            .collect();
        assert_eq!(ends, [(1, None), (2, Some(10.0))]);
        assert_eq!(e.finish(), None);
        // Summary lines at each epoch's end, as before.
        let mut e = LineEpochs::default();
        let ends: Vec<_> = [(3.0, "epoch 1 loss 0.5"), (6.0, "epoch 2 loss 0.4")]
            .iter()
            .filter_map(|(at, l)| e.line(&m, l, *at))
            .collect();
        assert_eq!(ends, [(1, None), (2, Some(3.0))]);
    }

    #[test]
    fn a_real_mps_fallback_warning_names_its_operator() {
        let text = include_str!("../tests/fixtures/macos/torch_mps_fallback_warning_m4pro.txt");
        let ops: Vec<String> = text.lines().filter_map(fallback_op).collect();
        assert_eq!(ops, ["aten::_upsample_bilinear2d_aa.out"]);
    }

    #[test]
    fn a_real_mps_profiler_op_line_gives_its_gpu_time() {
        let text =
            include_str!("../tests/fixtures/macos/torch_mps_log_profile_info_op_line_example.txt");
        let line = text.lines().nth(1).expect("the op line");
        assert_eq!(
            mps_op_gpu_ms(line),
            Some(("aten::copy_cast_mps".to_owned(), 0.010))
        );
        // Op lines logged without GPU time (an older nightly) and other lines give nothing.
        let tiny = include_str!("../tests/fixtures/macos/torch_mps_log_profile_info_tinygrad.txt");
        assert!(tiny.lines().all(|l| mps_op_gpu_ms(l).is_none()));
        assert_eq!(mps_op_gpu_ms("epoch 3 loss 0.2"), None);
    }

    #[test]
    fn batch_sizes_on_command_lines() {
        let args = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
        assert_eq!(
            batch_from_args(&args("python train.py --batch-size 64")),
            Some(64)
        );
        assert_eq!(
            batch_from_args(&args("python train.py --batch_size=32 --lr 1e-3")),
            Some(32)
        );
        assert_eq!(batch_from_args(&args("python train.py --bs 8")), Some(8));
        assert_eq!(batch_from_args(&args("python train.py -b 16")), Some(16));
        assert_eq!(batch_from_args(&args("python train.py --epochs 3")), None);
    }

    /// A child that has ended but is not yet reaped (a DataLoader worker at a pass's end) is
    /// listed among the children and has no memory left to read: it is left out, and the tree
    /// keeps its PSS.
    #[test]
    fn an_ended_child_costs_the_tree_nothing() {
        if !cfg!(target_os = "linux") {
            return;
        }
        let mut child = std::process::Command::new("true").spawn().expect("true");
        let stat = format!("/proc/{}/stat", child.id());
        let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !std::fs::read_to_string(&stat).is_ok_and(|s| {
            s.rsplit(')')
                .next()
                .is_some_and(|r| r.trim_start().starts_with('Z'))
        }) {
            assert!(std::time::Instant::now() < until, "the child did not end");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(process_tree(std::process::id()).contains(&child.id()));
        let r = read_memory(std::process::id(), 0.0).expect("this process");
        assert!(r.tree_pss_bytes.is_some(), "{r:?}");
        child.wait().expect("reap");
    }

    #[test]
    fn this_process_is_read_from_proc() {
        if !cfg!(target_os = "linux") {
            return;
        }
        let r = read_memory(std::process::id(), 0.0).expect("this process");
        assert!(r.process_bytes > 1 << 20);
        assert!(r.tree_bytes >= r.process_bytes);
        // PSS splits shared pages, so it is at most the RSS (this process has no children) —
        // give or take what the process allocated between the two reads (other tests run on
        // threads of this same process; 0.45 MiB was seen).
        let pss = r
            .tree_pss_bytes
            .expect("smaps_rollup is readable for our own process");
        assert!(
            pss > 0 && pss <= r.tree_bytes + (16 << 20),
            "pss {pss} rss {}",
            r.tree_bytes
        );
        assert!(r.processes >= 1);
        assert!(read_memory(u32::MAX - 7, 0.0).is_none());
    }
}
