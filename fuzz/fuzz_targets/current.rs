#![no_main]
//! Fuzz target `current`: see `shale_fuzz::current`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| shale_fuzz::run("current", data));
