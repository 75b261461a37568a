#![no_main]
//! Fuzz target `table`: see `shale_fuzz::table`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| shale_fuzz::run("table", data));
