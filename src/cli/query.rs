//! The commands over a built registry: `help`, `search`, `exec`, `eval`.

use super::args::{Format, PageFormat, Ranking, RegistryFile};
use super::shared::print_json;
use std::path::PathBuf;
use std::process::ExitCode;

/// A help page of a built registry.
pub(super) fn help(
    path: String,
    registry: RegistryFile,
    format: PageFormat,
    include_schemas: bool,
    no_examples: bool,
    as_text: bool,
) -> ExitCode {
    let print = |page: &serde_json::Value| {
        if as_text {
            print!("{}", super::page_text::render(page));
        } else {
            print_json(page);
        }
    };
    // A page asked for by its exact path is read alone from the lookup index (a cold help on
    // a 10,000-op registry parsed 80 MB for one page); anything else loads the registry.
    let asked = match path.trim() {
        "" => toolreg::help::ROOT,
        p => p,
    };
    if !include_schemas && !toolreg::text::over_name_limit(asked) {
        if let Some((dir, lookup)) = registry.lookup() {
            if let Some(mut page) = lookup.page(&dir, asked, format == PageFormat::Full) {
                if no_examples {
                    if let Some(o) = page.as_object_mut() {
                        o.remove("examples");
                    }
                }
                print(&page);
                return ExitCode::SUCCESS;
            }
        }
    }
    let gw = match registry.gateway() {
        Ok(g) => g,
        Err(code) => return code,
    };
    let req = toolreg::help::HelpRequest {
        path,
        format: match format {
            PageFormat::Short => toolreg::help::Format::Short,
            PageFormat::Full => toolreg::help::Format::Full,
        },
        include_examples: !no_examples,
        include_schemas,
        cursor: None,
    };
    let page = gw.help(&req);
    print(&page);
    if page.get("error").is_some() {
        // `toolreg help build` reads the catalog's help pages; the command's own help is `--help`.
        if super::args::is_command(req.path.trim()) {
            eprintln!(
                "note: `{0}` is a toolreg command; `toolreg {0} --help` explains it (`toolreg help PATH` reads the catalog's help pages)",
                req.path.trim()
            );
        }
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// `help OP --search-text`: what search finds an op by, field by field (weight, text, words).
pub(super) fn search_text(path: String, registry: RegistryFile) -> ExitCode {
    let gw = match registry.gateway() {
        Ok(g) => g,
        Err(code) => return code,
    };
    let reg = gw.registry();
    let Some(r) = reg.ops.get(&path).or_else(|| reg.op_by_tool_name(&path)) else {
        eprintln!(
            "error: `{}` is not an op or tool name of this registry",
            toolreg::diag::escape_controls(&path)
        );
        return ExitCode::from(1);
    };
    let esc = toolreg::diag::escape_controls;
    println!("{} is found by:", esc(&r.op));
    for (label, weight, text, words) in toolreg::runtime::search::search_fields(r) {
        if words.is_empty() {
            continue;
        }
        println!("\n{label} (weight {weight}):");
        for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
            println!("  {}", esc(line));
        }
        println!("  words: {}", esc(&words.join(" ")));
    }
    ExitCode::SUCCESS
}

/// Search a built registry.
pub(super) fn search(
    query: String,
    registry: RegistryFile,
    limit: usize,
    format: Format,
    ranking: Ranking,
) -> ExitCode {
    let gw = match registry.gateway_ranked(&ranking) {
        Ok(g) => g,
        Err(code) => return code,
    };
    let mut req = toolreg::runtime::search::SearchRequest::query(query);
    req.limit = Some(limit);
    let res = gw.search(&req);
    match format {
        Format::Json => print_json(&res),
        Format::Text => {
            // When nothing fits, that comes first: the results below are only the nearest.
            let none = res.match_ == toolreg::runtime::search::Match::None;
            if let Some(s) = res.suggestion.as_deref().filter(|_| none) {
                println!("{}\n", toolreg::diag::escape_controls(s));
            }
            for (i, h) in res.results.iter().enumerate() {
                // Catalog text reaches a terminal: escaped (`\u{1b}`), never raw.
                let esc = toolreg::diag::escape_controls;
                println!(
                    "{:>2}. {:<36} {:<5} {:.2}  {}",
                    i + 1,
                    esc(&h.op),
                    h.kind.as_str(),
                    h.confidence,
                    esc(&h.summary)
                );
                if let Some(u) = &h.usage {
                    println!("      {}", esc(u));
                }
            }
            if let Some(s) = res.suggestion.as_deref().filter(|_| !none) {
                println!("{}", toolreg::diag::escape_controls(s));
            }
            if res.nearest {
                print_json(&res.directory);
            }
        }
    }
    // The process ends here: freeing every op record one by one is work nobody waits for.
    std::mem::forget(gw);
    ExitCode::SUCCESS
}

/// Validate and run one call against a built registry (no handlers: a dry run of the checks).
pub(super) fn exec(op: String, args: String, registry: RegistryFile) -> ExitCode {
    // An op named exactly is read alone from the lookup index; anything else (a misspelling
    // to resolve or suggest for) loads the registry.
    let gw = match registry.gateway_for_op(&op) {
        Some(g) => g,
        None => match registry.gateway() {
            Ok(g) => g,
            Err(code) => return code,
        },
    };
    let call = toolreg::runtime::ExecCall {
        op,
        // An object goes as an object (what a model's tool call carries); anything else
        // as text, so the envelope can say what is wrong with it.
        args: Some(match serde_json::from_str::<serde_json::Value>(&args) {
            Ok(v @ serde_json::Value::Object(_)) => v,
            _ => serde_json::Value::String(args),
        }),
        idempotency_key: None,
        dry_run: Some(true),
    };
    let env = toolreg::runtime::block_on(gw.exec(call));
    print_json(&env);
    if env.ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// `exec --batch FILE`: a batch against a built registry, exec items as dry runs (the CLI has
/// no handlers). Exit 1 when an item failed or the batch was refused, 2 when FILE cannot be read.
pub(super) fn exec_batch(file: PathBuf, registry: RegistryFile) -> ExitCode {
    let gw = match registry.gateway() {
        Ok(g) => g,
        Err(code) => return code,
    };
    let text = if file.as_os_str() == "-" {
        let mut t = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut t).map(|_| t)
    } else {
        std::fs::read_to_string(&file)
    };
    let text = match text {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: cannot read `{}`: {e}", file.display());
            return ExitCode::from(2);
        }
    };
    let value: serde_json::Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => {
            eprintln!(
                "error: `{}` is not JSON: {e} (line {}, column {})",
                file.display(),
                e.line(),
                e.column()
            );
            return ExitCode::from(2);
        }
    };
    let tool = gw
        .registry()
        .gateway
        .batch
        .clone()
        .unwrap_or_else(|| "tool_batch".into());
    let mut batch = match toolreg::runtime::batch::Batch::parse(&value, &tool) {
        Ok(b) => b,
        Err(refused) => {
            print_json(&refused.0);
            return ExitCode::from(1);
        }
    };
    for item in &mut batch.items {
        if let toolreg::runtime::batch::BatchItem::Exec(call) = item {
            call.dry_run = Some(true);
        }
    }
    let answer = toolreg::runtime::block_on(gw.batch(&batch));
    print_json(&answer);
    if answer["ok"] == serde_json::Value::Bool(true) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// Recall of search over a query file.
/// What `toolreg eval` was asked (without `--calibrate`).
pub(super) struct EvalRun {
    pub(super) queries: PathBuf,
    pub(super) registry: RegistryFile,
    pub(super) k: Vec<usize>,
    pub(super) format: Format,
    pub(super) compare: bool,
    pub(super) out_of_scope: Option<PathBuf>,
    pub(super) ranking: Ranking,
    pub(super) quiet: bool,
}

pub(super) fn eval(run: EvalRun) -> ExitCode {
    let gw = match run.registry.gateway_ranked(&run.ranking) {
        Ok(g) => g,
        Err(code) => return code,
    };
    let read = |f: &PathBuf| {
        std::fs::read_to_string(f).map_err(|e| {
            eprintln!("error: cannot read `{}`: {e}", f.display());
            ExitCode::from(2)
        })
    };
    let text = match read(&run.queries) {
        Ok(t) => t,
        Err(code) => return code,
    };
    let oos = match run.out_of_scope.as_ref().map(read).transpose() {
        Ok(t) => t,
        Err(code) => return code,
    };
    // Started once nothing more is read, so no error of this command prints under it.
    let mut progress = super::progress::Progress::start(
        &format!("evaluating {}", run.queries.display()),
        run.quiet,
    );
    let (k, format) = (&run.k, run.format);
    if run.compare {
        progress.finish();
        return eval_compare(&gw, &text, k, format);
    }
    let abstention = match (&run.out_of_scope, oos) {
        (Some(f), Some(oos)) => match toolreg::runtime::eval::out_of_scope(&gw, &oos) {
            Ok(v) => Some(v),
            Err(e) => {
                progress.finish();
                eprintln!("error: {}: {e}", f.display());
                return ExitCode::from(2);
            }
        },
        _ => None,
    };
    let ran = toolreg::runtime::eval::run(&gw, &text, k);
    progress.finish();
    let floors = gw.match_floors();
    match ran {
        Ok(report) => {
            match format {
                Format::Json => {
                    let mut v = report.to_json();
                    if let Some(a) = abstention {
                        v["out_of_scope"] = a;
                    }
                    v["match_floors"] = serde_json::json!({
                        "signal": floors.signal,
                        "none_below": floors.floors.none_below,
                        "strong_from": floors.floors.strong_from,
                        "source": floors.source,
                    });
                    print_json(&v)
                }
                Format::Text => {
                    print!("{}", report.render_text());
                    println!(
                        "\nmatch floors ({}): none below {}, strong from {}; {}",
                        floors.signal,
                        floors.floors.none_below,
                        floors.floors.strong_from,
                        floors.source
                    );
                    if let Some(a) = abstention {
                        println!(
                            "\nout of scope ({} queries): answered strong {}, weak {}, none {}",
                            a["queries"],
                            a["answered_strong"],
                            a["answered_weak"],
                            a["answered_none"]
                        );
                    }
                }
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {}: {e}", run.queries.display());
            ExitCode::from(2)
        }
    }
}

/// `eval --calibrate`: `match` floors chosen on the team's in-scope and out-of-scope queries.
pub(super) fn calibrate(
    queries: PathBuf,
    out_of_scope: PathBuf,
    registry: RegistryFile,
    format: Format,
    ranking: Ranking,
    quiet: bool,
) -> ExitCode {
    let gw = match registry.gateway_ranked(&ranking) {
        Ok(g) => g,
        Err(code) => return code,
    };
    let mut texts = Vec::new();
    for f in [&queries, &out_of_scope] {
        match std::fs::read_to_string(f) {
            Ok(t) => texts.push(t),
            Err(e) => {
                eprintln!("error: cannot read `{}`: {e}", f.display());
                return ExitCode::from(2);
            }
        }
    }
    let mut progress =
        super::progress::Progress::start(&format!("calibrating on {}", queries.display()), quiet);
    let calibrated = toolreg::runtime::eval::calibrate(&gw, &texts[0], &texts[1]);
    progress.finish();
    match calibrated {
        Ok(v) => {
            match format {
                Format::Json => print_json(&v),
                Format::Text => {
                    println!(
                        "{} signal: in scope ({} queries) none {}, strong {}; out of scope ({} queries) none {}, strong {}\n\nPut in toolreg.toml (then build again):\n\n{}",
                        v["signal"].as_str().unwrap_or_default(),
                        v["in_scope"]["queries"],
                        v["in_scope"]["none"],
                        v["in_scope"]["strong"],
                        v["out_of_scope"]["queries"],
                        v["out_of_scope"]["none"],
                        v["out_of_scope"]["strong"],
                        v["toml"].as_str().unwrap_or_default()
                    );
                }
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

/// `eval --compare`: lexical, then hybrid, over the same queries.
fn eval_compare(
    gw: &toolreg::runtime::Gateway,
    text: &str,
    k: &[usize],
    format: Format,
) -> ExitCode {
    if !gw.has_hybrid() {
        eprintln!("error: --compare needs hybrid search: vectors.json beside the registry (`toolreg build` with the `semantic` feature)");
        return ExitCode::from(2);
    }
    let runs = toolreg::runtime::eval::run_ranked(gw, text, k, true).and_then(|lexical| {
        let hybrid = toolreg::runtime::eval::run_ranked(gw, text, k, false)?;
        toolreg::runtime::eval::compare(&lexical, &hybrid, k, 2000)
    });
    match runs {
        Ok(v) => {
            match format {
                Format::Json => print_json(&v),
                Format::Text => {
                    for (metric, m) in v.as_object().into_iter().flatten() {
                        match m.get("difference") {
                            Some(d) => println!(
                                "{metric:<10} lexical {}  hybrid {}  difference {:+} (95% interval {} .. {})",
                                m["lexical"], m["hybrid"], d.as_f64().unwrap_or(0.0), m["interval95"][0], m["interval95"][1]
                            ),
                            None => println!("{metric:<10} {m}"),
                        }
                    }
                }
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}
