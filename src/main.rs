fn main() {
    println!("shardlog: not yet wired");
}
