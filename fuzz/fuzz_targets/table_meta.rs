#![no_main]
//! Fuzz target `table_meta`: see `shale_fuzz::table_meta`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| shale_fuzz::run("table_meta", data));
