//! Tests of the tool search: the thresholds, what a step offers, the ranking, and `search_tools`
//! listing and loading against stand-in MCP tools.

use super::*;
use crate::tools::test_support::workspace;
use serde_json::json;

/// A stand-in MCP tool (the real ones need a server): a name, a description, a server.
struct Fake {
    name: String,
    description: String,
}

impl Tool for Fake {
    fn name(&self) -> &str {
        &self.name
    }
    fn description(&self) -> &str {
        &self.description
    }
    fn input_schema(&self) -> serde_json::Value {
        json!({"type": "object"})
    }
    fn read_only(&self) -> bool {
        false
    }
    fn mcp_server(&self) -> Option<&str> {
        Some("many")
    }
    fn summary(&self, _input: &serde_json::Value) -> String {
        String::new()
    }
    fn call<'a>(
        &'a self,
        _input: serde_json::Value,
        _ctx: &'a ToolContext,
    ) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async { ToolOutput::ok("ran") })
    }
}

fn with_mcp(count: usize) -> ToolRegistry {
    let mut registry = ToolRegistry::builtin();
    for n in 0..count {
        registry.register(Arc::new(Fake {
            name: format!("mcp__many__item_{n:03}"),
            description: if n == 7 {
                "Reads the tide tables of a harbour.\nMore lines.".to_owned()
            } else {
                format!("Looks up item {n} of the catalogue.")
            },
        }));
    }
    registry
}

fn names(registry: &ToolRegistry) -> Vec<&str> {
    registry.names()
}

#[test]
fn the_thresholds_decide_by_count_and_by_share_of_the_window() {
    let auto = ToolSearchSettings::default();
    assert!(!auto.applies(50, 1000, 128_000));
    assert!(auto.applies(51, 1000, 128_000));
    // 10% of 10,000 tokens is 1,000 tokens, 4,000 bytes.
    assert!(!auto.applies(3, 4000, 10_000));
    assert!(auto.applies(3, 4004, 10_000));
    let always = ToolSearchSettings {
        mode: ToolSearchMode::Always,
        ..auto
    };
    assert!(always.applies(1, 10, 128_000));
    assert!(!always.applies(0, 0, 128_000));
    let never = ToolSearchSettings {
        mode: ToolSearchMode::Never,
        ..auto
    };
    assert!(!never.applies(5000, 10_000_000, 1000));
    assert_eq!(
        ToolSearchMode::parse("always"),
        Some(ToolSearchMode::Always)
    );
    assert_eq!(ToolSearchMode::parse("Always"), None);
}

#[test]
fn below_the_threshold_the_registry_is_offered_as_it_is() {
    let loaded = Arc::new(LoadedTools::default());
    let offered = offer(
        with_mcp(10),
        &ToolSearchSettings::default(),
        128_000,
        &loaded,
    );
    assert!(offered.catalogue.is_none());
    assert_eq!(names(&offered.registry), names(&with_mcp(10)));
}

#[test]
fn past_it_only_loaded_mcp_tools_and_search_tools_are_offered() {
    let loaded = Arc::new(LoadedTools::default());
    loaded.restore(["mcp__many__item_003".to_owned()]);
    let offered = offer(
        with_mcp(60),
        &ToolSearchSettings::default(),
        128_000,
        &loaded,
    );
    let catalogue = offered.catalogue.expect("searched");
    assert_eq!(catalogue.len(), 60);
    let offered_names = names(&offered.registry);
    assert!(offered_names.contains(&SEARCH_TOOLS));
    assert!(offered_names.contains(&"mcp__many__item_003"));
    assert!(!offered_names.contains(&"mcp__many__item_004"));
    assert!(offered_names.contains(&"read_file"));
    assert_eq!(
        offered_names.len(),
        ToolRegistry::builtin().names().len() + 2
    );
    // Restored loads are not recorded again.
    assert!(loaded.take_unrecorded().is_empty());
    // A call to a tool not loaded loads it; an unknown name loads nothing.
    assert!(load_called(
        &catalogue,
        &loaded,
        ["mcp__many__item_004", "mcp__many__nothing"]
    ));
    assert!(!load_called(&catalogue, &loaded, ["mcp__many__item_004"]));
    assert_eq!(loaded.take_unrecorded(), vec!["mcp__many__item_004"]);
}

#[test]
fn ranking_puts_name_words_before_description_words_and_ties_by_name() {
    let entries = [
        ("mcp__a__tide_reader", "Reads something."),
        ("mcp__a__other", "Knows the tide."),
        ("mcp__a__another", "Knows the tide too."),
        ("mcp__a__unrelated", "Nothing here."),
    ];
    assert_eq!(rank(&entries, "tide"), vec![0, 2, 1]);
    // A start of a word counts less than the word.
    assert_eq!(rank(&entries, "read"), vec![0]);
    assert_eq!(rank(&entries, "re"), Vec::<usize>::new());
    // The whole name first, camelCase split, case ignored.
    assert_eq!(rank(&entries, "other")[0], 1);
    assert_eq!(rank(&[("mcp__x__getWeather", "")], "WEATHER"), vec![0]);
    assert!(rank(&entries, "  ").is_empty());
}

#[tokio::test]
async fn search_tools_lists_matches_and_loads_the_named_tools() {
    let loaded = Arc::new(LoadedTools::default());
    let offered = offer(
        with_mcp(60),
        &ToolSearchSettings::default(),
        128_000,
        &loaded,
    );
    let search = offered.registry.get(SEARCH_TOOLS).unwrap();
    let (_dir, ctx) = workspace();
    let found = search.call(json!({"query": "harbour tides"}), &ctx).await;
    assert!(!found.is_error, "{}", found.content);
    assert!(
        found
            .content
            .contains("- mcp__many__item_007: Reads the tide tables of a harbour.…"),
        "{}",
        found.content
    );
    assert!(found.content.starts_with("1 of the 60 MCP tools match"));
    // The list is bounded and counts the rest.
    let many = search
        .call(json!({"query": "catalogue", "limit": 3}), &ctx)
        .await;
    assert!(many.content.starts_with("59 of the 60 MCP tools match"));
    assert_eq!(many.content.matches("\n- ").count(), 3, "{}", many.content);

    let load = search
        .call(
            json!({"load": ["mcp__many__item_007", "mcp__many__nothing"]}),
            &ctx,
        )
        .await;
    assert!(
        load.content
            .contains("Loaded mcp__many__item_007: offered with their parameters"),
        "{}",
        load.content
    );
    assert!(
        load.content
            .contains("No MCP tool of this session is named mcp__many__nothing"),
        "{}",
        load.content
    );
    assert!(loaded.contains("mcp__many__item_007"));
    let again = search
        .call(
            json!({"load": ["mcp__many__item_007"], "query": "tide"}),
            &ctx,
        )
        .await;
    assert!(
        again
            .content
            .contains("Already loaded: mcp__many__item_007.")
    );
    assert!(again.content.contains("mcp__many__item_007 (loaded):"));

    let nothing = search.call(json!({}), &ctx).await;
    assert!(nothing.is_error);
    let too_many = search.call(json!({"load": vec!["x"; 21]}), &ctx).await;
    assert!(too_many.is_error);
    assert!(
        too_many.content.contains("load at most 20 at once"),
        "{}",
        too_many.content
    );
    let none = search.call(json!({"query": "zebra"}), &ctx).await;
    assert!(
        none.content
            .starts_with("No tool of the 60 MCP tools matches")
    );
    assert!(search.validate(&json!({"query": "x", "other": 1})).is_err());
}
