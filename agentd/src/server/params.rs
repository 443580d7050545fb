//! Reading method params: an object, a one-element array holding the object (what jsonrpsee's
//! client sends), or nothing at all for methods whose params are all optional.

use jsonrpsee::types::{ErrorObjectOwned, Params};
use serde::de::DeserializeOwned;

/// Parse `params` into `T`, answering `-32602` with serde's reason when they don't fit.
pub fn parse<T: DeserializeOwned>(params: &Params<'_>) -> Result<T, ErrorObjectOwned> {
    let raw = params.as_str().map(str::trim).unwrap_or("");
    let result = if raw.is_empty() || raw == "[]" {
        serde_json::from_str::<T>("{}")
    } else if raw.starts_with('[') {
        match serde_json::from_str::<(T,)>(raw) {
            Ok((value,)) => Ok(value),
            Err(err) => Err(err),
        }
    } else {
        serde_json::from_str::<T>(raw)
    };
    result.map_err(|err| {
        ErrorObjectOwned::owned(
            protocol::error::INVALID_PARAMS,
            format!(
                "invalid params: {}",
                protocol::error::echo_message(&err.to_string())
            ),
            None::<()>,
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize, PartialEq)]
    struct P {
        a: u32,
        #[serde(default)]
        b: Option<String>,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct Empty {}

    #[test]
    fn accepts_object_and_one_element_array() {
        assert_eq!(parse::<P>(&Params::new(Some(r#"{"a":1}"#))).unwrap().a, 1);
        assert_eq!(
            parse::<P>(&Params::new(Some(r#"[{"a":2,"b":"x"}]"#)))
                .unwrap()
                .a,
            2
        );
    }

    #[test]
    fn missing_params_parse_as_empty_object() {
        assert_eq!(parse::<Empty>(&Params::new(None)).unwrap(), Empty {});
        assert_eq!(parse::<Empty>(&Params::new(Some("[]"))).unwrap(), Empty {});
    }

    #[test]
    fn bad_params_explain_why() {
        let err = parse::<P>(&Params::new(Some(r#"{"a":"x"}"#))).unwrap_err();
        assert_eq!(err.code(), protocol::error::INVALID_PARAMS);
        assert!(err.message().contains("invalid type"), "{}", err.message());
        let err = parse::<P>(&Params::new(Some(r#"[{"a":1},{"a":2}]"#))).unwrap_err();
        assert_eq!(err.code(), protocol::error::INVALID_PARAMS);
    }
}
