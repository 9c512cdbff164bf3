//! Search quality on query sets nobody tuned the scorer's structure on, with thresholds a change
//! to search must keep. Each set is compiled from its definitions with no overlay (zero-config).
//!
//! - tests/eval/metatool: the MetaTool benchmark (HowieHwong/MetaTool, MIT), 199 tools; a dev
//!   set (600 queries, used for tuning) and a held-out set (1,500, only reported), and
//!   misspelled copies of both (scripts/eval-data/typos.py).
//! - tests/eval/phrasing: everyday phrasing, abbreviations and compounds over four real MCP
//!   servers' tools (GitHub, Slack, filesystem, memory); a dev set written here for the
//!   phrasing data (src/runtime/phrasing.json).
//! - tests/eval/seed/typos.jsonl: the seed queries (../shared/eval), each with one typo.
#![cfg(all(feature = "compiler", feature = "runtime"))]

mod common;

use toolreg::runtime::eval::{self, Report};
use toolreg::runtime::Gateway;

fn gateway_for(definitions: &str) -> Gateway {
    let compiled = toolreg::compiler::compile(&common::repo().join(definitions));
    let reg = compiled
        .registry
        .unwrap_or_else(|| panic!("{definitions} compiles: {:?}", compiled.diagnostics));
    let help = toolreg::emit::help::build(&reg);
    Gateway::new(reg, help).unwrap()
}

/// A gateway over a catalog written here: each tool a name and a description, no arguments.
fn gateway_of(tools: &[(&str, &str)]) -> Gateway {
    let tmp = tempfile::tempdir().unwrap();
    let tools: Vec<serde_json::Value> = tools
        .iter()
        .map(|(name, description)| {
            serde_json::json!({"type": "function", "function": {"name": name, "description": description,
                "parameters": {"type": "object", "properties": {}, "additionalProperties": false}}})
        })
        .collect();
    std::fs::write(
        tmp.path().join("tools.json"),
        serde_json::Value::from(tools).to_string(),
    )
    .unwrap();
    gateway_for(tmp.path().to_str().unwrap())
}

fn run(gw: &Gateway, queries: &str) -> Report {
    let text = std::fs::read_to_string(common::repo().join(queries)).unwrap();
    eval::run(gw, &text, &[1, 5, 10]).unwrap()
}

fn at_least(report: &Report, metric: &str, floor: f64, set: &str) {
    let got = report.metric(metric);
    assert!(got >= floor, "{set}: {metric} {got} < {floor}");
}

#[test]
fn metatool_dev_and_held_out_with_and_without_typos() {
    let gw = gateway_for("tests/eval/metatool/definitions");
    // Figures measured with this scorer (README: search quality); floors just below them.
    for (set, r1, r5) in [
        ("tests/eval/metatool/dev.jsonl", 0.47, 0.72),
        ("tests/eval/metatool/heldout.jsonl", 0.45, 0.69),
        ("tests/eval/metatool/dev-typos.jsonl", 0.45, 0.71),
        ("tests/eval/metatool/heldout-typos.jsonl", 0.44, 0.68),
    ] {
        let report = run(&gw, set);
        at_least(&report, "recall@1", r1, set);
        at_least(&report, "recall@5", r5, set);
    }
}

#[test]
fn everyday_phrasing_and_typos_are_understood() {
    let gw = gateway_for("tests/eval/phrasing/definitions");
    let report = run(&gw, "tests/eval/phrasing/dev.jsonl");
    at_least(&report, "recall@1", 0.74, "phrasing dev");
    at_least(&report, "recall@5", 0.85, "phrasing dev");

    let seed = Gateway::from_dir(common::repo().join("generated")).unwrap();
    let report = run(&seed, "tests/eval/seed/typos.jsonl");
    at_least(&report, "recall@1", 0.75, "seed typos");
    at_least(&report, "recall@5", 0.92, "seed typos");
}

#[test]
fn a_misspelled_or_abbreviated_word_finds_the_catalog_word() {
    let gw = gateway_for("tests/eval/phrasing/definitions");
    let top = |q: &str| {
        let r = gw.search(&toolreg::runtime::search::SearchRequest::query(q));
        r.results
            .first()
            .map(|h| h.tool_name.clone())
            .unwrap_or_default()
    };
    // One edit from a catalog word: swapped, dropped, doubled, replaced letters.
    assert_eq!(top("fork a repostiory"), "fork_repository");
    assert_eq!(top("delte entities"), "delete_entities");
    assert_eq!(top("list the commmits"), "list_commits");
    assert_eq!(top("merge the pull requesr"), "merge_pull_request");
    // Abbreviations, a hyphenated word, a compound the catalog splits, a phrase.
    assert_eq!(top("fork a repo"), "fork_repository");
    assert_eq!(top("post a msg to a channel"), "slack_post_message");
    assert_eq!(top("show the directory-tree"), "directory_tree");
    assert_eq!(top("get rid of entities"), "delete_entities");
}

/// The search answer of a page of `n`.
fn search_answer(gw: &Gateway, q: &str, n: usize) -> toolreg::runtime::search::SearchResponse {
    let mut req = toolreg::runtime::search::SearchRequest::query(q);
    req.limit = Some(n);
    gw.search(&req)
}

/// The first `n` results.
fn search_hits(gw: &Gateway, q: &str, n: usize) -> Vec<toolreg::runtime::search::Hit> {
    search_answer(gw, q, n).results
}

/// The tool names of the first `n` results.
fn search_tools(gw: &Gateway, q: &str, n: usize) -> Vec<String> {
    let hits = search_hits(gw, q, n);
    hits.into_iter().map(|h| h.tool_name).collect()
}

/// The ops of the first `n` results.
fn search_top(gw: &Gateway, q: &str, n: usize) -> Vec<String> {
    search_hits(gw, q, n).into_iter().map(|h| h.op).collect()
}

/// Issue 37, item 2: everyday phrasing families (data in src/runtime/phrasing.json) reach the
/// op over the repo's own catalog, one case per family.
#[test]
fn everyday_phrasing_families_reach_the_op() {
    let seed = Gateway::from_dir(common::repo().join("generated")).unwrap();
    for (family, query, op, within) in [
        // Two phrases that mean `list` ("remind me": list or get; "what's left": list) are two
        // pieces of evidence for it: first, not behind `onto.task.get`.
        (
            "what is left",
            "remind me what's left before launch",
            "onto.task.list",
            1,
        ),
        (
            "finished / to-do",
            "show me every finished to-do",
            "onto.task.list",
            3,
        ),
        ("on my plate", "what's on my plate", "onto.task.list", 1),
        ("get rid of", "get rid of that task", "onto.task.delete", 3),
        (
            "jot down",
            "jot down a task to call the bank",
            "onto.task.create",
            3,
        ),
        (
            "hook up",
            "hook up this task to the goal",
            "onto.edge.link",
            3,
        ),
        ("pull up", "pull up the project", "onto.project.get", 3),
    ] {
        let top = search_top(&seed, query, within);
        assert!(
            top.iter().any(|o| o == op),
            "{family}: {query:?} -> {top:?}, expected {op} in the top {within}"
        );
    }
    // A phrase's words are covered by what it means: "what's left" alone is a list of tasks,
    // said with confidence, not `none` for a `left` no op has; and the `s` of "what's" no
    // longer matches every "task's" in the catalog (`onto.task.docs.list`, "a task's
    // workspace", ranked first before).
    let res = seed.search(&toolreg::runtime::search::SearchRequest::query(
        "what's left",
    ));
    assert_eq!(res.results[0].op, "onto.task.list", "{res:?}");
    assert_ne!(res.match_, toolreg::runtime::search::Match::None, "{res:?}");
    // A family whose words the example catalog lacks (folder), over four real MCP servers' tools.
    let servers = gateway_for("tests/eval/phrasing/definitions");
    let query = "make a new folder called drafts";
    let res = servers.search(&toolreg::runtime::search::SearchRequest::query(query));
    assert_eq!(
        res.results[0].tool_name, "create_directory",
        "folder: {res:?}"
    );
}

/// Issue 37, item 2: everyday words of a common topic (the `topics` family of
/// src/runtime/phrasing.json: a forecast's words mean weather, a coin's cryptocurrency) reach the
/// tool that names the topic, over MetaTool's catalog, one request per family. The requests are
/// written here, in none of the eval sets; each finds its tool only through the topic's word
/// ("humid" and "dogecoin" are in no tool's text).
#[test]
fn everyday_topic_words_reach_the_tool_of_the_topic() {
    let gw = gateway_for("tests/eval/metatool/definitions");
    for (family, query, tools, within) in [
        (
            "weather",
            "will it be humid in Lisbon tomorrow",
            &["WeatherTool"][..],
            1,
        ),
        (
            "cryptocurrency",
            "how is dogecoin doing this week",
            &["FinanceTool"],
            1,
        ),
        (
            "stock",
            "upcoming dividend dates for Apple",
            &["FinanceTool"],
            3,
        ),
        ("job", "any vacancies for nurses in Leeds", &["JobTool"], 1),
        (
            "travel",
            "book a hotel near the Colosseum",
            &["TripTool", "TripAdviceTool"],
            1,
        ),
        (
            "house",
            "find a condo with a balcony in Miami",
            &["HousePurchasingTool", "HouseRentingTool"],
            3,
        ),
        (
            "product",
            "a good smartphone under 300 dollars",
            &["ProductSearch"],
            3,
        ),
        ("course", "piano lessons for beginners", &["CourseTool"], 1),
        (
            "recipe",
            "a vegan lasagna for six",
            &["recipe_retrieval"],
            1,
        ),
        ("discount", "a voucher for running shoes", &["Discount"], 1),
    ] {
        let found = search_tools(&gw, query, within);
        assert!(
            found.iter().any(|t| tools.contains(&t.as_str())),
            "{family}: {query:?} -> {found:?}, expected one of {tools:?} in the top {within}"
        );
    }
}

/// A word no tool uses reaches the tool through the words nearest it in meaning that the
/// catalog holds (src/runtime/search/word_neighbours.txt), while `match` reads only the query's
/// own words: the request is found, and not called a strong fit. Written here, in none of the
/// eval sets.
#[test]
fn a_word_no_tool_uses_reaches_the_tool_by_its_nearest_words() {
    let gw = gateway_of(&[
        ("find_trails", "Find walking trails near a place."),
        ("find_restaurants", "Find restaurants near a place."),
        ("find_events", "Find concerts and shows near a place."),
        (
            "convert_money",
            "Convert an amount from one currency to another.",
        ),
        ("get_exchange_news", "Get news about stock exchanges."),
    ]);
    for (query, tool) in [
        ("good hiking spots near Denver", "find_trails"),
        ("how much is 40 usd in yen", "convert_money"),
    ] {
        let answer = search_answer(&gw, query, 5);
        let first = &answer.results[0].tool_name;
        assert_eq!(first, tool, "{query:?}");
        assert_ne!(
            answer.match_,
            toolreg::runtime::search::Match::Strong,
            "{query:?}"
        );
    }
}

/// Issue 37, item 2: an everyday English word (src/runtime/common_words.txt) is weaker evidence
/// than a word only this request would use. MetaTool names a tool `news`, so "new" (stemmed to
/// the same word) pulled a request for a *new* flashcard to it: before this weighting the
/// request below ranked `ph_ai_news_query` and `NewsTool` above `MemoryTool`. Written here, in
/// none of the eval sets.
#[test]
fn everyday_words_weigh_less_than_what_the_request_is_about() {
    let gw = gateway_for("tests/eval/metatool/definitions");
    let query = "make me a new flashcard for the Spanish verbs";
    assert_eq!(search_tools(&gw, query, 1), ["MemoryTool"], "{query:?}");
}

/// Issue 37, item 2: an op that covers every word of a request ranks above one that matches
/// fewer of them more often. BM25 sums what each word adds, so `get_invoice`, which says
/// "invoice" five times, ranked first for an overdue invoice reminder before the best ops were
/// rescored by their coverage of the request.
#[test]
fn the_op_covering_the_whole_request_ranks_above_one_repeating_a_word() {
    let gw = gateway_of(&[
        (
            "get_invoice",
            "Get an invoice. Invoice totals, invoice lines and invoice taxes of one invoice.",
        ),
        (
            "send_reminder",
            "Send a payment reminder for an overdue invoice to the customer.",
        ),
        ("list_customers", "List customers."),
    ]);
    assert_eq!(
        search_tools(&gw, "overdue invoice reminder", 2),
        ["send_reminder", "get_invoice"]
    );
    // A request about the invoice itself still finds it first.
    assert_eq!(
        search_tools(&gw, "invoice totals and taxes", 1),
        ["get_invoice"]
    );
}

/// Issue 37: a request of several steps ("get the forecast, then post it to my team") shows an
/// op for each step in its first five answers. Eight forecast ops share the first step's words
/// and filled all five; the one op that posts came sixth. The first answer, and `match`, stay
/// the whole request's.
#[test]
fn each_step_of_a_request_has_an_op_in_the_first_five() {
    let gw = gateway_of(&[
        (
            "get_forecast",
            "Get the weather forecast of a city for the next week.",
        ),
        ("get_current_weather", "Get the current weather of a city."),
        (
            "get_weather_alerts",
            "Get weather alerts of a city for the next week.",
        ),
        (
            "get_hourly_forecast",
            "Get the hourly weather forecast of a city.",
        ),
        (
            "get_air_quality",
            "Get the air quality forecast of a city for the next week.",
        ),
        ("get_uv_index", "Get the UV index forecast of a city."),
        (
            "get_pollen_forecast",
            "Get the pollen forecast of a city for the next week.",
        ),
        (
            "get_sunrise",
            "Get sunrise and sunset times of a city for the next week.",
        ),
        ("send_message", "Send a message to a team channel."),
    ]);
    let two_steps = "Get the weather forecast of Paris for the next week, then post it to my team";
    let one_request = "Get the weather forecast of Paris for the next week, post it to my team";
    let whole = search_tools(&gw, one_request, 10);
    assert!(
        whole.iter().position(|t| t == "send_message") >= Some(5),
        "read as one request, the poster is past the first five: {whole:?}"
    );
    let steps = search_tools(&gw, two_steps, 5);
    assert_eq!(steps.len(), 5);
    assert!(steps.contains(&"send_message".to_string()), "{steps:?}");
    assert_eq!(steps[0], whole[0]);
    assert_eq!(
        search_answer(&gw, two_steps, 10).match_,
        search_answer(&gw, one_request, 10).match_
    );
    // Pages of one ranking: the second page goes on where the first stopped.
    let mut req = toolreg::runtime::search::SearchRequest::query(two_steps);
    req.limit = Some(3);
    let first = gw.search(&req);
    req.cursor = first.next_cursor.clone();
    let second = gw.search(&req);
    let paged: Vec<String> = first
        .results
        .iter()
        .chain(&second.results)
        .map(|h| h.tool_name.clone())
        .collect();
    assert_eq!(paged, search_tools(&gw, two_steps, 6));
}

/// Issue 37, item 2: words that only frame a request ("give me", "tell me", "help me": the
/// `framing` family of src/runtime/phrasing.json) do not match an op named by that verb; alone,
/// they are still what is asked.
#[test]
fn request_framing_is_not_what_is_asked() {
    let gw = gateway_of(&[
        (
            "give_feedback",
            "Give feedback on this assistant to its developers.",
        ),
        ("tell_joke", "Tell a joke."),
        ("get_weather", "Current weather and forecast for a city."),
        ("get_stock_price", "Current price of a stock ticker."),
    ]);
    let top = |q: &str| {
        let res = gw.search(&toolreg::runtime::search::SearchRequest::query(q));
        res.results
            .first()
            .map(|h| h.tool_name.clone())
            .unwrap_or_default()
    };
    // Before, the framing verb put its op first ("tell me about the forecast" -> tell_joke,
    // "give me a ticker quote" -> give_feedback) or in the results.
    assert_eq!(top("tell me about the forecast"), "get_weather");
    assert_eq!(top("give me a ticker quote"), "get_stock_price");
    assert_eq!(top("can you help me with the weather"), "get_weather");
    let res = gw.search(&toolreg::runtime::search::SearchRequest::query(
        "Tell me the price of nvidia's stock",
    ));
    let names: Vec<&str> = res.results.iter().map(|h| h.tool_name.as_str()).collect();
    assert_eq!(names, ["get_stock_price"], "{res:?}");
    // Framing alone, or the verb used for itself: the op that does it.
    assert_eq!(top("tell me"), "tell_joke");
    assert_eq!(top("give feedback"), "give_feedback");
}

/// Issue 37, item 4: every script tokenizes and matches: Cyrillic, Chinese, Japanese and Korean
/// (written without spaces: two-character words), and accented Latin with or without accents.
#[test]
fn every_script_tokenizes_and_matches() {
    let gw = gateway_of(&[
        ("list_invoices", "Показать все счета клиента за месяц."),
        ("create_meeting", "创建新的会议并邀请参与者。"),
        ("search_recipes", "レシピをキーワードで検索します。"),
        ("send_parcel", "택배를 보내고 배송 상태를 확인합니다."),
        ("book_cafe", "Réserver une table au café près de l'hôtel."),
        ("get_weather", "Returns the weather forecast for a city."),
    ]);
    for (query, tool) in [
        ("показать счета", "list_invoices"),
        ("会议", "create_meeting"),
        ("我想创建会议", "create_meeting"),
        ("レシピを検索", "search_recipes"),
        ("택배 배송", "send_parcel"),
        ("réserver un café", "book_cafe"),
        ("reserver cafe hotel", "book_cafe"),
    ] {
        let mut req = toolreg::runtime::search::SearchRequest::query(query);
        req.limit = Some(1);
        let res = gw.search(&req);
        assert!(!res.nearest, "{query:?} matched no word: {res:?}");
        assert_eq!(
            res.results.first().map(|h| h.tool_name.as_str()),
            Some(tool),
            "{query:?}"
        );
    }
}

/// Issue 37, item 4: search says when nothing fits. Floors chosen on the dev splits, held here
/// on the held-out splits: MetaTool's in-scope queries are rarely `none`, its out-of-scope
/// queries (needing no tool) never `strong`; over a catalog that has nothing of theirs (four
/// MCP servers' tools) most are `none`. An exact name is always `strong`.
#[test]
fn search_says_when_nothing_fits() {
    use toolreg::runtime::search::Match;
    let gw = gateway_for("tests/eval/metatool/definitions");
    let report = run(&gw, "tests/eval/metatool/heldout.jsonl");
    let none = report.metric("answered_none");
    assert!(none <= 0.05, "in-scope held out answered none {none}");
    assert!(report.metric("recall@5") >= 0.65, "recall unchanged");
    let oos = std::fs::read_to_string(
        common::repo().join("tests/eval/metatool/out-of-scope-heldout.jsonl"),
    )
    .unwrap();
    let v = eval::out_of_scope(&gw, &oos).unwrap();
    assert!(
        v["answered_strong"].as_f64().unwrap() <= 0.01,
        "{}",
        v["answered_strong"]
    );
    // 13.9%: 14.6% before the topic words (phrasing.json `topics`), which gave two of these
    // 288 requests a topic's word to match ("a 2BR apartment in downtown Chicago": the house
    // tools), while in-scope `none` fell from 4.0% to 3.6%; 15.6% before clitics were dropped
    // (three queries were `none` for the `m` of "I'm", a word no op has).
    assert!(
        v["answered_none"].as_f64().unwrap() >= 0.135,
        "{}",
        v["answered_none"]
    );

    let other = gateway_for("tests/eval/phrasing/definitions");
    let v = eval::out_of_scope(&other, &oos).unwrap();
    assert!(
        v["answered_none"].as_f64().unwrap() >= 0.30,
        "{}",
        v["answered_none"]
    );
    assert_eq!(v["answered_strong"].as_f64().unwrap(), 0.0);

    // Lexical search alone calls a request that shares one word with the catalog `weak`, never
    // `strong` (tests/semantic.rs: with the bundled encoder it is `none`).
    let res = other.search(&toolreg::runtime::search::SearchRequest::query(
        "order a large pepperoni pizza to my office",
    ));
    assert_eq!(res.match_, Match::Weak, "{res:?}");
    // A `none` answer says so first, keeps results, and names what the catalog covers.
    let res = other.search(&toolreg::runtime::search::SearchRequest::query(
        "bake sourdough bread tonight",
    ));
    assert_eq!(res.match_, Match::None, "{res:?}");
    assert!(!res.results.is_empty(), "never an empty answer");
    let said = res.suggestion.unwrap();
    assert!(said.starts_with("No op does this"), "{said}");
    // An exact name is strong; a plain request for what an op does is not `none`.
    let res = other.search(&toolreg::runtime::search::SearchRequest::query(
        "fork_repository",
    ));
    assert_eq!(res.match_, Match::Strong);
    let res = other.search(&toolreg::runtime::search::SearchRequest::query(
        "create a new branch in the repository",
    ));
    assert_eq!(res.match_, Match::Strong, "{res:?}");
}

/// Issue 37, item 4: a team calibrates `match` on its own queries. `eval --calibrate` chooses
/// floors on in-scope and out-of-scope dev queries (at most 5% of the first `none`, at most 2%
/// of the second `strong`); put under `[search]`, they decide every answer of the registry built
/// with them, and a pair out of order is TR020 at its line.
#[test]
fn match_floors_are_calibrated_on_a_teams_own_queries() {
    use toolreg::runtime::search::{Match, SearchRequest};
    let read = |f: &str| std::fs::read_to_string(common::repo().join(f)).unwrap();
    let gw = gateway_for("tests/eval/metatool/definitions");
    let v = eval::calibrate(
        &gw,
        &read("tests/eval/metatool/dev.jsonl"),
        &read("tests/eval/metatool/out-of-scope-dev.jsonl"),
    )
    .unwrap();
    assert_eq!(v["signal"], "lexical");
    assert!(v["in_scope"]["none"].as_f64().unwrap() <= 0.05, "{v}");
    assert!(v["out_of_scope"]["strong"].as_f64().unwrap() <= 0.02, "{v}");
    let (none_below, strong_from) = (
        v["none_below"].as_f64().unwrap(),
        v["strong_from"].as_f64().unwrap(),
    );
    assert!(0.0 < none_below && none_below <= strong_from, "{v}");
    let toml = v["toml"].as_str().unwrap();
    assert!(
        toml.starts_with("[search]\nmatch_lexical = { none_below = "),
        "{toml}"
    );

    // The printed lines, put in the overlay, decide `match` from then on: a query whose
    // signal lies between the default floor and a raised one is `weak` before, `none` after.
    let work = tempfile::tempdir().unwrap();
    let defs = work.path().join("definitions");
    common::copy_dir(
        &common::repo().join("tests/eval/metatool/definitions"),
        &defs,
    );
    std::fs::write(
        defs.join("toolreg.toml"),
        "[search]\nmatch_lexical = { none_below = 0.2, strong_from = 0.9 }\n",
    )
    .unwrap();
    let compiled = toolreg::compiler::compile(&defs);
    let reg = compiled.registry.unwrap();
    assert_eq!(reg.search.match_lexical.unwrap().none_below, 0.2);
    let raised = Gateway::new(reg.clone(), toolreg::emit::help::build(&reg)).unwrap();
    let q = "Are there any good hiking trails near my area?";
    let coverage = gw.match_signals(q).unwrap().0;
    assert!((0.045..0.2).contains(&coverage), "{coverage}");
    assert_eq!(gw.search(&SearchRequest::query(q)).match_, Match::Weak);
    let res = raised.search(&SearchRequest::query(q));
    assert_eq!(res.match_, Match::None, "{res:?}");
    assert!(res.suggestion.unwrap().starts_with("No op does this"));

    // Floors out of order: TR020 at the line, and no registry.
    std::fs::write(
        defs.join("toolreg.toml"),
        "[search]\nmatch_lexical = { none_below = 0.6, strong_from = 0.5 }\n",
    )
    .unwrap();
    let compiled = toolreg::compiler::compile(&defs);
    assert!(compiled.registry.is_none());
    let d = compiled
        .diagnostics
        .iter()
        .find(|d| d.message.contains("match_lexical"))
        .unwrap_or_else(|| panic!("{:?}", compiled.diagnostics));
    assert_eq!(d.code.as_str(), "TR020", "{d:?}");
    assert!(d.to_string().contains("toolreg.toml:2"), "{d}");
}

/// MetaTool's held-out split over the catalog in `defs` (lexical): the report, and the shares
/// of the out-of-scope held-out split answered `strong` and `none`.
fn metatool_held_out(defs: &std::path::Path) -> (Report, f64, f64) {
    let reg = toolreg::compiler::compile(defs).registry.unwrap();
    let gw = Gateway::new(reg.clone(), toolreg::emit::help::build(&reg)).unwrap();
    let report = run(&gw, "tests/eval/metatool/heldout.jsonl");
    let oos = eval::out_of_scope(
        &gw,
        &std::fs::read_to_string(
            common::repo().join("tests/eval/metatool/out-of-scope-heldout.jsonl"),
        )
        .unwrap(),
    )
    .unwrap();
    let share = |k: &str| oos[k].as_f64().unwrap();
    (report, share("answered_strong"), share("answered_none"))
}

/// Issue 37, item 1: `toolreg learn` adds the requests a team has seen (MetaTool's dev split,
/// never a held-out one) to each op's `queries`, keeping the overlay's comments; search reads
/// them, and the held-out split gains 15 points of recall@1. Learning twice adds nothing; a log
/// naming a tool the catalog lacks changes nothing.
#[test]
fn learned_requests_find_what_people_mean() {
    let work = tempfile::tempdir().unwrap();
    let defs = work.path().join("definitions");
    common::copy_dir(
        &common::repo().join("tests/eval/metatool/definitions"),
        &defs,
    );
    let ours = "# our catalog\n[search]\nsemantic_weight = 0.5 # tuned\n";
    std::fs::write(defs.join("toolreg.toml"), ours).unwrap();
    let dev = common::repo().join("tests/eval/metatool/dev.jsonl");
    let oos_dev = common::repo().join("tests/eval/metatool/out-of-scope-dev.jsonl");
    let oos_dev = oos_dev.to_str().unwrap();
    let learn = |queries: &std::path::Path| common::learn(work.path(), &defs, queries, &[]);
    let first = learn(&dev);
    assert!(first.status.success(), "{}", common::stderr(&first));
    assert!(
        common::stderr(&first).contains("added 600 requests to 176 ops"),
        "{}",
        common::stderr(&first)
    );
    let overlay = std::fs::read_to_string(defs.join("toolreg.toml")).unwrap();
    assert!(overlay.starts_with(ours), "{overlay}");
    let again = learn(&dev);
    assert!(
        common::stderr(&again).contains("added 0 requests to 0 ops")
            && common::stderr(&again).contains("(600 already there"),
        "{}",
        common::stderr(&again)
    );

    let compiled = toolreg::compiler::compile(&defs);
    let reg = compiled.registry.unwrap();
    let gw = Gateway::new(reg.clone(), toolreg::emit::help::build(&reg)).unwrap();
    let report = run(&gw, "tests/eval/metatool/heldout.jsonl");
    // Measured: .419 / .628 zero-config, .573 / .798 with the dev split's requests.
    at_least(&report, "recall@1", 0.56, "held out, learned");
    at_least(&report, "recall@5", 0.78, "held out, learned");

    // With the out-of-scope dev split, learn also sets the lexical `match` floors, cross-fitted
    // over ten folds (the requests are already in the overlay: each fold's are taken out before
    // it is scored). Held out, in-scope `none` stays under 5% and out-of-scope `none` rises
    // above what floors calibrated on the learned requests themselves give.
    let calibrated = common::learn(
        work.path(),
        &defs,
        &dev,
        &["--out-of-scope", oos_dev, "--quiet"],
    );
    let said = common::stderr(&calibrated);
    assert!(calibrated.status.success(), "{said}");
    assert!(
        said.contains("set [search] match_lexical = { none_below = ")
            && said.contains("cross-fitted, in scope `none` 4.5%")
            && !said.contains("warning"),
        "{said}"
    );
    let overlay = std::fs::read_to_string(defs.join("toolreg.toml")).unwrap();
    assert!(overlay.starts_with(ours), "{overlay}");
    let floors = toolreg::compiler::compile(&defs)
        .registry
        .unwrap()
        .search
        .match_lexical
        .expect("floors set");
    let (report, strong_out, none_out) = metatool_held_out(&defs);
    at_least(
        &report,
        "recall@5",
        0.78,
        "held out, learned and calibrated",
    );
    let none_in = report.metric("answered_none");
    // Measured: in scope `none` 4.7%, out of scope `strong` 2.1% and `none` 29.2%, floors aimed
    // at 4.5% of the requests `none` (aimed at 5%: 5.3%; floors from `eval --calibrate` on half
    // the dev split, learned from the other half: 18.8%).
    assert!(none_in <= 0.05, "in-scope none {none_in} ({floors:?})");
    assert!(
        strong_out <= 0.05 && none_out >= 0.25,
        "out of scope strong {strong_out}, none {none_out} ({floors:?})"
    );

    // Out-of-scope queries that cannot decide floors (a broken line; too few to calibrate on):
    // refused, and the overlay is as it was.
    for (lines, says) in [
        ("{\"query\": \"what is a contralto\"}\nnot json\n", "line 2"),
        ("{\"query\": \"what is a contralto\"}\n", "at least 20"),
    ] {
        let oos = work.path().join("oos.jsonl");
        std::fs::write(&oos, lines).unwrap();
        let out = common::learn(
            work.path(),
            &defs,
            &dev,
            &["--out-of-scope", oos.to_str().unwrap(), "--quiet"],
        );
        let said = common::stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{said}");
        assert!(
            said.contains(says) && said.contains("nothing was written"),
            "{said}"
        );
        assert_eq!(
            std::fs::read_to_string(defs.join("toolreg.toml")).unwrap(),
            overlay
        );
    }

    // A short log makes rough floors: learn sets them and says so.
    let few_defs = work.path().join("few");
    common::copy_dir(
        &common::repo().join("tests/eval/metatool/definitions"),
        &few_defs,
    );
    // Hybrid floors chosen before: left as they are by a lexical calibration, which says so.
    std::fs::write(
        few_defs.join("toolreg.toml"),
        "[search]\nmatch_hybrid = { none_below = 0.4, strong_from = 0.7 }\n",
    )
    .unwrap();
    let few = work.path().join("few.jsonl");
    let dev_text = std::fs::read_to_string(&dev).unwrap();
    std::fs::write(
        &few,
        dev_text.lines().take(40).collect::<Vec<_>>().join("\n"),
    )
    .unwrap();
    let out = common::learn(
        work.path(),
        &few_defs,
        &few,
        &["--out-of-scope", oos_dev, "--quiet"],
    );
    let said = common::stderr(&out);
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains("set [search] match_lexical")
            && said.contains("warning: 40 requests decided the floors: 5% of them is 2 requests")
            && said.contains("warning: [search] match_hybrid was left as it was"),
        "{said}"
    );
    let kept = std::fs::read_to_string(few_defs.join("toolreg.toml")).unwrap();
    assert!(
        kept.contains("match_hybrid = { none_below = 0.4, strong_from = 0.7 }")
            && kept.contains("match_lexical = { none_below = "),
        "{kept}"
    );

    let bad = work.path().join("bad.jsonl");
    std::fs::write(&bad, "{\"query\": \"x\", \"expected\": [\"NoSuchTool\"]}\n").unwrap();
    let refused = learn(&bad);
    assert_eq!(refused.status.code(), Some(2));
    assert!(common::stderr(&refused).contains("line 1: `NoSuchTool` is not an op or tool name"));
    assert_eq!(
        std::fs::read_to_string(defs.join("toolreg.toml")).unwrap(),
        overlay
    );

    // A longer log teaches more: the whole dev side of MetaTool's split (2,104 requests, the
    // 600 above among them) adds the rest, at most 64 per op, and the floors are chosen again.
    let log = common::repo().join("tests/eval/metatool/dev-log.jsonl");
    let longer = common::learn(
        work.path(),
        &defs,
        &log,
        &["--out-of-scope", oos_dev, "--quiet"],
    );
    let said = common::stderr(&longer);
    assert!(longer.status.success(), "{said}");
    assert!(
        said.contains("added 1454 requests to 198 ops")
            && said.contains("(600 already there, 50 past 64 per op)"),
        "{said}"
    );
    let (report, strong_out, none_out) = metatool_held_out(&defs);
    // Measured: .684 / .873 (600 requests: .584 / .805); in-scope `none` 4.5%, out of scope
    // `strong` 3.5% and `none` 40.6%.
    at_least(&report, "recall@1", 0.67, "held out, learned from the log");
    at_least(&report, "recall@5", 0.86, "held out, learned from the log");
    let none_in = report.metric("answered_none");
    assert!(none_in <= 0.05, "in-scope none {none_in}");
    assert!(
        strong_out <= 0.05 && none_out >= 0.38,
        "out of scope strong {strong_out}, none {none_out}"
    );
}
