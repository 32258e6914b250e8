#![no_main]
// cargo +nightly fuzz run config — see fuzz/run.sh.
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    headroom_core::fuzzing::run("config", data);
});
