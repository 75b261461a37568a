#![no_main]
//! Fuzz target `vlog`: see `shale_fuzz::vlog`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| shale_fuzz::run("vlog", data));
