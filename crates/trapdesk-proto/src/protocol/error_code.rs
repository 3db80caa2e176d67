//! [`ErrorCode`]: every `error.code` the host, the gateway wire and the MCP results name
//! (docs/mcp.md, "Errors", holds the same list as a table).

crate::wire_names! {
    /// An error's `code`, by its name on the wire and in MCP results.
    pub enum ErrorCode ("error code") {
        UnknownComputer = "unknown_computer",
        AmbiguousComputer = "ambiguous_computer",
        Timeout = "timeout",
        Disconnected = "disconnected",
        Cancelled = "cancelled",
        Busy = "busy",
        ShuttingDown = "shutting_down",
        /// Every bad argument an agent gave, whoever found it.
        InvalidArguments = "invalid_arguments",
        /// The gateway wire's name for an argument the computer refuses; MCP results name it
        /// `invalid_arguments`.
        BadRequest = "bad_request",
        BadPath = "bad_path",
        UnknownType = "unknown_type",
        Internal = "internal",
        /// CC dropped the request's events from a full event queue.
        Lost = "lost",
        /// The computer went off in CC's hard abort while the request ran.
        ShutDown = "shut_down",
        NotPending = "not_pending",
        DetachedLimit = "detached_limit",
        UnknownRequest = "unknown_request",
        /// A request this host issued whose result is no longer kept.
        Expired = "expired",
        BadContent = "bad_content",
        NotFound = "not_found",
        NotATurtle = "not_a_turtle",
        TooLarge = "too_large",
        Exists = "exists",
        IsDir = "is_dir",
        NotDir = "not_dir",
        NotEmpty = "not_empty",
        ReadOnly = "read_only",
        NoSpace = "no_space",
        NoSpaceToReplace = "no_space_to_replace",
        /// A file refusal whose words name none of the file codes above.
        FileError = "file_error",
        /// The policy denies it.
        Denied = "denied",
        /// The person refused it.
        Refused = "refused",
        /// The person gave no answer in time.
        NotAnswered = "not_answered",
        /// `ask` with no console to answer.
        NoApprover = "no_approver",
        /// The person stopped all agents.
        Paused = "paused",
        /// The person holds the keyboard.
        PersonTyping = "person_typing",
        /// A request that is never asked about (a completion's listing) that the policy would
        /// ask the person about.
        NeedsApproval = "needs_approval",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::names::docs_table_names;

    #[test]
    fn every_code_round_trips_by_its_name() {
        for c in ErrorCode::ALL {
            assert_eq!(c.as_str().parse::<ErrorCode>(), Ok(c));
            assert_eq!(
                serde_json::to_value(c).ok(),
                Some(serde_json::json!(c.as_str()))
            );
            assert_eq!(c.to_string(), c.as_str());
        }
        let e = "oops".parse::<ErrorCode>().map_err(|e| e.to_string());
        assert_eq!(e, Err("unknown error code \"oops\"".into()));
    }

    #[test]
    fn the_docs_table_names_exactly_the_codes() {
        let doc =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/mcp.md"))
                .unwrap_or_default();
        let listed = docs_table_names(&doc, "`ErrorCode` in");
        let codes: Vec<&str> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(
            listed, codes,
            "docs/mcp.md, \"Errors\": one row per ErrorCode, in its order"
        );
    }
}
