//! Build benchmark on synthetic catalogs of 100, 1,000 and 10,000 tools with realistic schemas
//! (nested objects, arrays of objects, enums, defaults, 300-700 character descriptions), once with
//! an overlay of 120 ordered rules and once with no overlay (every op inferred from its name).
//!
//! Each build runs in a child process (this binary re-executed with `--child`), so wall time
//! includes process start and the peak RSS is the build's own. Prints medians and growth ratios,
//! and checks that a no-change rebuild writes nothing.
//!
//! `cargo bench --bench build_scale` for the full run; `-- --quick` for one pass on 100 and 1,000
//! tools (what CI runs, to prove it works; CI does not judge its figures). `-- --emitters`: each
//! emitter alone and all together at 1K/5K/10K/20K tools. `-- --hostile`: a 100,000-property
//! schema, and a 20,000-tool export minified onto one line against its pretty-printed twin.
//! `-- --incremental`: the default build of 10,000 tools cold, after one changed tool, and with
//! nothing changed (just built, and once the files settled), and the registry alone, then the
//! real ToolSDK catalog (8,010 MCP tools) cold and after one changed tool (wall and CPU seconds,
//! peak RSS; before and after with `TOOLREG_BENCH_BEFORE`).
//! `-- --fleet`: the public fleet catalogs of tests/catalogs/fleet per emitter, before and after
//! (`TOOLREG_BENCH_BEFORE=OLD_TOOLREG`). `-- --write-catalog N DIR` only writes the synthetic catalog of N tools, to profile a build by
//! hand. `TOOLREG_BENCH_DIR` puts the scratch folders elsewhere (a tmpfs keeps the file system's
//! own costs, which vary with the disk's state, out of the figures).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

#[path = "support/synthetic.rs"]
mod synthetic;
use synthetic::write_catalog;

/// Peak resident set size of this process's largest finished child (Linux: KiB).
fn children_peak_kib() -> u64 {
    // SAFETY: getrusage only writes the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) } != 0 {
        return 0;
    }
    usage.ru_maxrss.max(0) as u64
}

/// Child mode: one `toolreg build` (the real command, with its allocator), then `written <n>
/// peak_kib <k>` on stdout. `all` runs every emitter. This process has no other child, so the
/// peak is the build's own.
fn child(defs: &Path, out: &Path, which: &str, bin: Option<&str>) {
    let mut cmd = Command::new(bin.unwrap_or(env!("CARGO_BIN_EXE_toolreg")));
    cmd.arg("build")
        .arg("--definitions")
        .arg(defs)
        .arg("--out")
        .arg(out);
    if which != "all" {
        cmd.args(["--emit", which]);
    }
    let o = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    // An earlier binary may refuse a catalog this one builds: say so instead of a figure.
    if !o.status.success() && bin.is_some() {
        println!("written 0 peak_kib {} failed", children_peak_kib());
        return;
    }
    assert!(o.status.success(), "{stderr}");
    // "built N ops in G groups (version): W written, R removed, U unchanged in `out`"
    let written = stderr
        .split(" written")
        .next()
        .and_then(|head| head.rsplit(' ').next())
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or_else(|| panic!("no `written` count in: {stderr}"));
    println!("written {written} peak_kib {}", children_peak_kib());
}

struct Run {
    secs: f64,
    written: usize,
    peak_kib: u64,
    /// False when the build refused the catalog (only an earlier binary may).
    ok: bool,
}

fn run_child(defs: &Path, out: &Path, which: &str) -> Run {
    run_child_with(defs, out, which, None)
}

/// `run_child` with another toolreg binary (the fleet mode's "before").
fn run_child_with(defs: &Path, out: &Path, which: &str, bin: Option<&Path>) -> Run {
    let start = Instant::now();
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.arg("--child").arg(defs).arg(out).arg(which);
    if let Some(b) = bin {
        cmd.arg(b);
    }
    let o = cmd.output().unwrap();
    let secs = start.elapsed().as_secs_f64();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    let words: Vec<&str> = text.split_whitespace().collect();
    Run {
        secs,
        written: words[1].parse().unwrap(),
        peak_kib: words[3].parse().unwrap(),
        ok: words.get(4) != Some(&"failed"),
    }
}

/// A scratch folder, in `TOOLREG_BENCH_DIR` when set.
fn scratch() -> tempfile::TempDir {
    match std::env::var_os("TOOLREG_BENCH_DIR") {
        Some(dir) => tempfile::tempdir_in(dir).unwrap(),
        None => tempfile::tempdir().unwrap(),
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--child") {
        child(
            Path::new(&args[2]),
            Path::new(&args[3]),
            args.get(4).map(String::as_str).unwrap_or("registry"),
            args.get(5).map(String::as_str),
        );
        return;
    }
    if args.iter().any(|a| a == "--fleet") {
        fleet(args.iter().any(|a| a == "--quick"));
        return;
    }
    if args.iter().any(|a| a == "--incremental") {
        incremental(args.iter().any(|a| a == "--quick"));
        return;
    }
    if args.iter().any(|a| a == "--emitters") {
        per_emitter(&[1000, 5000, 10_000, 20_000]);
        return;
    }
    if args.iter().any(|a| a == "--hostile") {
        hostile();
        return;
    }
    // `--write-catalog N DIR`: only write the synthetic catalog (for profiling a build by hand).
    if args.get(1).map(String::as_str) == Some("--write-catalog") {
        write_catalog(Path::new(&args[3]), args[2].parse().expect("N is a number"));
        return;
    }
    let quick = args.iter().any(|a| a == "--quick");
    let (sizes, reps): (&[usize], usize) = if quick {
        (&[100, 1000], 1)
    } else {
        (&[100, 1000, 10_000], 5)
    };
    let tmp = scratch();
    println!("toolreg build benchmark: registry only, child process per build, {reps} run(s) each, median");
    println!(
        "{:>7} {:<22} {:>10} {:>12} {:>14} {:>10}",
        "tools", "overlay", "input MB", "build (s)", "no-change (s)", "peak MB"
    );
    // The same catalog twice: with its 120-rule overlay, and with no overlay at all, where
    // inference (compiler::infer) classifies every tool.
    let mut medians: Vec<(usize, f64, f64)> = Vec::new();
    for &n in sizes {
        let mut pair = [0.0; 2];
        for (v, variant) in ["120 rules", "none (all inferred)"].iter().enumerate() {
            let defs = tmp.path().join(format!("defs-{n}-{v}"));
            write_catalog(&defs, n);
            if v == 1 {
                std::fs::remove_file(defs.join("toolreg.toml")).unwrap();
            }
            let input_mb = walkdir::WalkDir::new(&defs)
                .into_iter()
                .filter_map(|e| e.ok())
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum::<u64>() as f64
                / 1e6;
            let mut cold = Vec::new();
            let mut warm = Vec::new();
            let mut peak = 0;
            for r in 0..reps {
                let out = tmp.path().join(format!("out-{n}-{v}-{r}"));
                let first = run_child(&defs, &out, "registry");
                assert!(first.written > 0);
                let again = run_child(&defs, &out, "registry");
                assert_eq!(again.written, 0, "a no-change rebuild must write nothing");
                cold.push(first.secs);
                warm.push(again.secs);
                peak = peak.max(first.peak_kib);
            }
            pair[v] = median(cold);
            println!(
                "{n:>7} {variant:<22} {input_mb:>10.1} {:>12.3} {:>14.3} {:>10.1}",
                pair[v],
                median(warm),
                peak as f64 / 1024.0
            );
        }
        medians.push((n, pair[0], pair[1]));
    }
    for (n, rules, inferred) in &medians {
        println!(
            "{n} tools: no overlay (inference) / 120 rules: x{:.2}",
            inferred / rules
        );
    }
    for w in medians.windows(2) {
        let ((a, ta, ia), (b, tb, ib)) = (w[0], w[1]);
        println!(
            "growth {a} -> {b} tools ({}x): time x{:.1} with rules, x{:.1} inferred",
            b / a,
            tb / ta,
            ib / ia
        );
    }
    println!("no-change rebuilds wrote 0 files");

    // Every emitter (registry, help, surfaces, report with BPE counts, Rust via typify,
    // TypeScript, docs) on 1,000 tools.
    let defs = tmp.path().join("defs-1000-all");
    write_catalog(&defs, 1000);
    let mut times = Vec::new();
    let mut written = 0;
    let mut peak = 0;
    for r in 0..reps {
        let run = run_child(&defs, &tmp.path().join(format!("all-{r}")), "all");
        written = run.written;
        peak = peak.max(run.peak_kib);
        times.push(run.secs);
    }
    println!(
        "all emitters, 1000 tools: {:.3} s median, {written} files, peak {:.1} MB",
        median(times),
        peak as f64 / 1024.0
    );
}

/// CPU seconds (user + system) of every finished child and grandchild so far.
fn children_cpu_secs() -> f64 {
    // SAFETY: getrusage only writes the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) } != 0 {
        return 0.0;
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

/// `-- --incremental`: the default build (every default emitter) of 10,000 tools into a folder
/// with no cache, then after one tool's description changed, then with nothing changed (just
/// after that build, then with the files settled), and the
/// registry alone into a fresh folder; each three times (median), wall and CPU seconds, peak RSS
/// and files written. With `TOOLREG_BENCH_BEFORE=PATH` (a toolreg binary of an earlier commit)
/// every build runs with both binaries, interleaved, each on its own copy of the catalog and its
/// own output folder, so before and after come from one run. `--quick`: 1,000 tools, once (what
/// CI runs).
fn incremental(quick: bool) {
    let (n, reps) = if quick { (1000, 1) } else { (10_000, 3) };
    let tmp = scratch();
    let before = std::env::var_os("TOOLREG_BENCH_BEFORE").map(std::path::PathBuf::from);
    let mut bins: Vec<(&str, Option<&Path>)> = vec![("now", None)];
    if let Some(b) = &before {
        bins.insert(0, ("before", Some(b.as_path())));
    }
    // Per binary: its own copy of a catalog (made by `make`), its output folder.
    let places_of = |catalog: &str, make: &dyn Fn(&Path)| -> Vec<(PathBuf, PathBuf)> {
        bins.iter()
            .map(|(name, _)| {
                let defs = tmp.path().join(format!("{catalog}-defs-{name}"));
                make(&defs);
                (defs, tmp.path().join(format!("{catalog}-out-{name}")))
            })
            .collect()
    };
    let places = places_of("synthetic", &|defs| write_catalog(defs, n));
    // One tool's description, changed for run `k`.
    let changed = |file: &Path, pointer: &str, k: usize| {
        let mut v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
        *v.pointer_mut(pointer).expect("the tool's description") =
            format!("Changed for run {k}.").into();
        std::fs::write(file, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    };
    let edit = |defs: &Path, k: usize| {
        changed(&defs.join("tools-0000.json"), "/0/function/description", k)
    };
    type Prepare<'a> = &'a dyn Fn(&Path, &Path, usize);
    type Places = [(PathBuf, PathBuf)];
    let measure_in = |places: &Places, label: &str, which: &str, prepare: Prepare| {
        #[derive(Default, Clone)]
        struct Row {
            wall: Vec<f64>,
            cpu: Vec<f64>,
            peak_kib: u64,
            written: usize,
        }
        let mut rows = vec![Row::default(); bins.len()];
        for k in 0..reps {
            for (b, (_, bin)) in bins.iter().enumerate() {
                let (defs, out) = &places[b];
                prepare(defs, out, k);
                let cpu = children_cpu_secs();
                let run = run_child_with(defs, out, which, *bin);
                rows[b].cpu.push(children_cpu_secs() - cpu);
                rows[b].wall.push(run.secs);
                rows[b].peak_kib = rows[b].peak_kib.max(run.peak_kib);
                rows[b].written = run.written;
            }
        }
        for ((name, _), row) in bins.iter().zip(rows) {
            println!(
                "{:<34} {name:>7} {:>9.3} {:>9.3} {:>9.0} {:>9}",
                label,
                median(row.wall),
                median(row.cpu),
                row.peak_kib as f64 / 1024.0,
                row.written
            );
        }
    };
    let measure =
        |label: &str, which: &str, prepare: Prepare| measure_in(&places, label, which, prepare);
    println!("toolreg build, {n} tools, every default emitter, {reps} run(s) each, median");
    println!(
        "{:<34} {:>7} {:>9} {:>9} {:>9} {:>9}",
        "build", "binary", "wall (s)", "CPU (s)", "peak MB", "written"
    );
    measure("full (no cache)", "all", &|defs, out, k| {
        let _ = std::fs::remove_dir_all(out);
        edit(defs, 100 + k);
    });
    measure("one tool changed", "all", &|defs, _, k| edit(defs, 200 + k));
    // Files just written (as right after a build): every binary must read them all, whichever
    // ran last (without this, the interleaving left one binary's files older than `SETTLED`).
    measure("nothing changed, files just made", "all", &|_, out, _| {
        touch_tree(out)
    });
    // Files older than the cache's `SETTLED`: a no-change build that reads them all records
    // their stat identity, and the next ones read none (one such build first, unmeasured).
    std::thread::sleep(toolreg::write::cache::SETTLED + std::time::Duration::from_millis(200));
    for (b, (_, bin)) in bins.iter().enumerate() {
        let (defs, out) = &places[b];
        run_child_with(defs, out, "all", *bin);
    }
    measure("nothing changed, files settled", "all", &|_, _, _| {});
    measure("registry only (no cache)", "registry", &|_, out, _| {
        let _ = std::fs::remove_dir_all(out);
    });
    if quick {
        return;
    }
    // A real catalog nobody here wrote: ToolSDK's 8,010 MCP tools (tests/catalogs/fleet), one
    // tool's description edited as above.
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let fleet = places_of("toolsdk", &|defs| {
        copy_tree(&repo.join("tests/catalogs/fleet/toolsdk"), defs)
    });
    let edit_server = |defs: &Path, k: usize| {
        changed(&defs.join("12306-mcp.mcp.json"), "/tools/0/description", k)
    };
    println!("ToolSDK, 8,010 MCP tools of 491 servers, every default emitter");
    measure_in(&fleet, "ToolSDK full (no cache)", "all", &|defs, out, k| {
        let _ = std::fs::remove_dir_all(out);
        edit_server(defs, 100 + k);
    });
    measure_in(&fleet, "ToolSDK one tool changed", "all", &|defs, _, k| {
        edit_server(defs, 200 + k)
    });
}

/// Every file under `dir` (the cache's too) modified now, its bytes as they were.
fn touch_tree(dir: &Path) {
    let now = std::time::SystemTime::now();
    for entry in walkdir::WalkDir::new(dir).into_iter().flatten() {
        if entry.file_type().is_file() {
            let file = std::fs::File::options()
                .write(true)
                .open(entry.path())
                .unwrap();
            file.set_modified(now).unwrap();
        }
    }
}

/// A copy of the files of folder `from` (one level, as the fleet catalogs lie) in `to`.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() {
            std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
        }
    }
}

/// `-- --emitters`: each emitter alone, then all together (the default build), at 1K/5K/10K/20K
/// tools, one build each in its own process (fresh output folder): wall time, peak RSS, and the
/// growth factor per 2x tools (5K -> 10K -> 20K).
fn per_emitter(sizes: &[usize]) {
    let tmp = scratch();
    let names = [
        "registry", "help", "surfaces", "report", "rust", "ts", "docs", "all",
    ];
    let mut table: Vec<Vec<(f64, f64)>> = Vec::new();
    for &n in sizes {
        let defs = tmp.path().join(format!("defs-{n}"));
        write_catalog(&defs, n);
        let mut row = Vec::new();
        for name in names {
            let run = run_child(&defs, &tmp.path().join(format!("out-{n}-{name}")), name);
            row.push((run.secs, run.peak_kib as f64 / 1024.0));
            let _ = std::fs::remove_dir_all(tmp.path().join(format!("out-{n}-{name}")));
        }
        table.push(row);
    }
    println!("per emitter, one build each in its own process: seconds / peak MB");
    print!("{:>9}", "emitter");
    for n in sizes {
        print!(" {:>18}", format!("{n} tools"));
    }
    println!(" {:>22}", "growth per 2x (t, mem)");
    for (k, name) in names.iter().enumerate() {
        print!("{name:>9}");
        for row in &table {
            print!(" {:>18}", format!("{:.2} s / {:.0} MB", row[k].0, row[k].1));
        }
        let growth: Vec<String> = sizes
            .windows(2)
            .zip(table.windows(2))
            .filter(|(w, _)| w[1] == 2 * w[0])
            .map(|(_, t)| {
                format!(
                    "x{:.2}/x{:.2}",
                    t[1][k].0 / t[0][k].0,
                    t[1][k].1 / t[0][k].1
                )
            })
            .collect();
        println!(" {:>22}", growth.join(" "));
    }
}

/// `-- --fleet`: the public fleet catalogs of tests/catalogs/fleet (no overlay), each emitter
/// alone and all together, median of 3 builds each in its own process (fresh output folder).
/// With `TOOLREG_BENCH_BEFORE=PATH` (a toolreg binary of an earlier commit) the same builds run
/// with it too, interleaved, so before and after are measured in one run. `--quick`: one build
/// of the ToolBench catalog with every emitter (what CI runs, to prove the mode works).
fn fleet(quick: bool) {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let before = std::env::var_os("TOOLREG_BENCH_BEFORE").map(std::path::PathBuf::from);
    let tmp = scratch();
    let (catalogs, names, reps): (&[&str], &[&str], usize) = if quick {
        (&["toolbench"], &["all"], 1)
    } else {
        (
            &["toolbench", "livemcp", "toolsdk"],
            &[
                "registry", "help", "surfaces", "report", "rust", "ts", "docs", "all",
            ],
            3,
        )
    };
    println!(
        "fleet catalogs, no overlay: median of {reps} build(s) each, seconds / peak MB{}",
        if before.is_some() {
            " (before -> after)"
        } else {
            ""
        }
    );
    for cat in catalogs {
        let defs = repo.join("tests/catalogs/fleet").join(cat);
        println!("{cat}:");
        for name in names {
            let mut runs: Vec<(Option<Run>, Run)> = Vec::new();
            for k in 0..reps {
                let out = tmp.path().join(format!("{cat}-{name}-{k}"));
                let b = before.as_deref().map(|bin| {
                    let r = run_child_with(&defs, &out.with_extension("before"), name, Some(bin));
                    let _ = std::fs::remove_dir_all(out.with_extension("before"));
                    r
                });
                let a = run_child(&defs, &out, name);
                let _ = std::fs::remove_dir_all(&out);
                runs.push((b, a));
            }
            let after_t = median(runs.iter().map(|r| r.1.secs).collect());
            let after_m = runs.iter().map(|r| r.1.peak_kib).max().unwrap_or(0) as f64 / 1024.0;
            let files = runs[0].1.written;
            match runs[0].0.is_some() {
                true => {
                    let before_t = median(
                        runs.iter()
                            .filter_map(|r| r.0.as_ref().map(|b| b.secs))
                            .collect(),
                    );
                    let before_m = runs
                        .iter()
                        .filter_map(|r| r.0.as_ref().map(|b| b.peak_kib))
                        .max()
                        .unwrap_or(0) as f64
                        / 1024.0;
                    let before_files = runs[0].0.as_ref().map_or(0, |b| b.written);
                    if !runs[0].0.as_ref().is_some_and(|b| b.ok) {
                        println!(
                            "  {name:>9}: build refused the catalog -> {after_t:.2} s / {after_m:.0} MB / {files} files"
                        );
                        continue;
                    }
                    println!(
                        "  {name:>9}: {before_t:.2} s / {before_m:.0} MB / {before_files} files -> {after_t:.2} s / {after_m:.0} MB / {files} files (x{:.2})",
                        after_t / before_t
                    );
                }
                false => println!("  {name:>9}: {after_t:.2} s / {after_m:.0} MB / {files} files"),
            }
        }
    }
}

/// `-- --hostile`: inputs shaped to make a build slow. Default build (every emitter), child
/// process each, median of 3.
fn hostile() {
    let tmp = scratch();
    let runs = 3;
    let time = |defs: &Path, which: &str, tag: &str| {
        let mut secs = Vec::new();
        let mut peak = 0;
        for r in 0..runs {
            let out = tmp.path().join(format!("out-{tag}-{r}"));
            let run = run_child(defs, &out, which);
            secs.push(run.secs);
            peak = peak.max(run.peak_kib);
            let _ = std::fs::remove_dir_all(&out);
        }
        (median(secs), peak as f64 / 1024.0)
    };
    println!("hostile inputs, child process per build, median of {runs}");
    // One tool whose schema has 100,000 properties: bare (`{"type": "string"}`), and with a
    // description each.
    for described in [false, true] {
        let defs = tmp.path().join(format!("wide-{described}"));
        std::fs::create_dir_all(&defs).unwrap();
        let props: serde_json::Map<String, serde_json::Value> = (0..100_000)
            .map(|i| {
                let mut p = serde_json::json!({"type": "string"});
                if described {
                    p["description"] = format!("Field {i}.").into();
                }
                (format!("p{i}"), p)
            })
            .collect();
        let tools = serde_json::json!([{"type": "function", "function": {
            "name": "list_things", "description": "List things.",
            "parameters": {"type": "object", "properties": props}}}]);
        std::fs::write(
            defs.join("tools.json"),
            serde_json::to_string_pretty(&tools).unwrap(),
        )
        .unwrap();
        let (secs, mb) = time(&defs, "all", "wide");
        let what = if described { "described" } else { "bare" };
        println!("100,000-property schema ({what}): {secs:.3} s, peak {mb:.0} MB");
    }
    // 20,000 tools, pretty-printed and minified onto one line (line:col lookups must not
    // depend on line length). Registry only: the front end is what reads the text.
    let pretty = tmp.path().join("pretty");
    write_catalog(&pretty, 20_000);
    let minified = tmp.path().join("minified");
    std::fs::create_dir_all(&minified).unwrap();
    for entry in std::fs::read_dir(&pretty).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_owned();
        let text = std::fs::read_to_string(&path).unwrap();
        let text = if path.extension().is_some_and(|e| e == "json") {
            let v: serde_json::Value = serde_json::from_str(&text).unwrap();
            serde_json::to_string(&v).unwrap()
        } else {
            text
        };
        std::fs::write(minified.join(name), text).unwrap();
    }
    let (p, _) = time(&pretty, "registry", "pretty");
    let (m, _) = time(&minified, "registry", "minified");
    println!(
        "20,000 tools, registry: pretty-printed {p:.3} s, minified {m:.3} s (x{:.2})",
        m / p
    );
}
