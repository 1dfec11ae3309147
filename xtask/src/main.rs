mod ts_facts;
fn main() {}
