fn main() -> anyhow::Result<()> {
    if std::env::args().nth(1).as_deref() == Some("loadgen") {
        let args = shardlog::loadgen::parse_args_from(std::env::args().skip(1));
        return shardlog::loadgen::run(args);
    }
    if std::env::args().nth(1).as_deref() == Some("bench") {
        let args = shardlog::loadgen::bench::parse_args_from(std::env::args().skip(1));
        return shardlog::loadgen::bench::run(args);
    }
    println!("shardlog: not yet wired");
    Ok(())
}
