//! Model selection as an ACP session config option (category `model`): the choices are the
//! daemon's configured providers with their models (`daemon/status` `providers`, where the
//! daemon reports them) and the session's own; a choice goes to `session/update {model}`.

use agent_client_protocol::v1::schema::{
    SessionConfigOption, SessionConfigOptionCategory, SessionConfigOptionValue,
    SessionConfigSelectOption,
};

/// The config option id of the model.
pub const MODEL_OPTION: &str = "model";

/// `provider:model`, the form `session/create` and `session/update` take.
pub fn model_id(provider: &str, model: &str) -> String {
    format!("{provider}:{model}")
}

/// The models to offer: each configured provider's model (from a `daemon/status` result),
/// and `current` first.
pub fn available(status: &serde_json::Value, current: &str) -> Vec<String> {
    let mut models = vec![current.to_owned()];
    let providers = status.get("providers").and_then(|p| p.as_array());
    for provider in providers.into_iter().flatten() {
        let (Some(name), Some(model)) = (
            provider.get("name").and_then(|n| n.as_str()),
            provider.get("model").and_then(|m| m.as_str()),
        ) else {
            continue;
        };
        let id = model_id(name, model);
        if !models.contains(&id) {
            models.push(id);
        }
    }
    models
}

/// The model select with `current` chosen among `models`.
pub fn option(current: &str, models: &[String]) -> SessionConfigOption {
    let choices: Vec<SessionConfigSelectOption> = models
        .iter()
        .map(|model| SessionConfigSelectOption::new(model.clone(), model.clone()))
        .collect();
    SessionConfigOption::select(MODEL_OPTION, "Model", current.to_owned(), choices)
        .category(SessionConfigOptionCategory::Model)
        .description("The model of the session's next run".to_owned())
}

/// The model a `session/set_config_option` value names.
pub fn chosen(value: &SessionConfigOptionValue) -> Option<String> {
    match value {
        SessionConfigOptionValue::ValueId { value } => Some(value.0.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_choices_are_the_current_model_then_each_providers() {
        let status = json!({"providers": [
            {"name": "mock", "model": "mock-model"},
            {"name": "big", "model": "big-model"},
            {"name": "broken"},
        ]});
        assert_eq!(
            available(&status, "mock:mock-model"),
            ["mock:mock-model", "big:big-model"]
        );
        // A daemon that does not list its providers: only the session's model.
        assert_eq!(available(&json!({}), "a:b"), ["a:b"]);
        let option = serde_json::to_value(option("a:b", &["a:b".to_owned()])).unwrap();
        assert_eq!(option["id"], "model");
        assert_eq!(option["category"], "model");
        assert_eq!(option["type"], "select");
        assert_eq!(option["currentValue"], "a:b");
        assert_eq!(option["options"][0]["value"], "a:b");
    }
}
