//! Pagination cursors are opaque tokens this host issued (MCP, "Pagination"): one it never
//! issued is refused with `-32602`, as the specification says for an invalid cursor, rather
//! than read as the first page.

use rmcp::ErrorData;
use rmcp::model::PaginatedRequestParams;

fn invalid(list: &str, cursor: &str) -> ErrorData {
    ErrorData::invalid_params(
        format!(
            "{list}: invalid cursor {cursor:?}: pass back a nextCursor this list gave, or none for the first page"
        ),
        None,
    )
}

/// A list that fits one page issues no cursor: any cursor is invalid.
pub(crate) fn unpaged(
    request: Option<&PaginatedRequestParams>,
    list: &str,
) -> Result<(), ErrorData> {
    match request.and_then(|r| r.cursor.as_deref()) {
        Some(c) => Err(invalid(list, c)),
        None => Ok(()),
    }
}

/// A list paged by position: its cursors are decimal offsets.
pub(crate) fn offset(
    request: Option<&PaginatedRequestParams>,
    list: &str,
) -> Result<usize, ErrorData> {
    match request.and_then(|r| r.cursor.as_deref()) {
        None => Ok(0),
        Some(c) if !c.is_empty() && c.bytes().all(|b| b.is_ascii_digit()) => {
            c.parse().map_err(|_| invalid(list, c))
        }
        Some(c) => Err(invalid(list, c)),
    }
}
