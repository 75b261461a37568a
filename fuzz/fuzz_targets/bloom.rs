#![no_main]
//! Fuzz target `bloom`: see `shale_fuzz::bloom`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| shale_fuzz::run("bloom", data));
