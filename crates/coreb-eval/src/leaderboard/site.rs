//! The static site: `index.html` (markup, style and script in one file, nothing loaded from
//! elsewhere) and `data.js` (the [`Leaderboard`] as `window.COREB_LEADERBOARD = {…};`, a
//! script rather than JSON because browsers refuse `fetch` of a `file://` URL). The page's
//! script recomputes the table, the breakdowns and the plot from `data.js` when its controls
//! move, following the definitions of [`super`].
//!
//! Pure: returns the files' names and contents. Does NOT write them.

use super::Leaderboard;

/// The page (built into the binary from `crates/coreb-eval/src/leaderboard/index.html`).
pub const INDEX_HTML: &str = include_str!("index.html");

/// The files of the site, `(name, content)`, in the order they should be written (the data
/// first, so that a page never appears before its data).
pub fn files(board: &Leaderboard) -> Result<Vec<(&'static str, String)>, serde_json::Error> {
    let json = serde_json::to_string(board)?;
    // JSON is JavaScript; `</` is escaped so that the data could also be inlined in a page.
    let data = format!("window.COREB_LEADERBOARD = {};\n", json.replace("</", "<\\/"));
    Ok(vec![("data.js", data), ("index.html", INDEX_HTML.to_owned())])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_loads_nothing_from_outside_its_folder() {
        let page = INDEX_HTML.to_ascii_lowercase();
        assert!(page.contains("<script src=\"data.js\"></script>"));
        for outside in ["http://", "https://", "//cdn", "@import", "url("] {
            // The SVG namespace is an identifier, not a request.
            let hits = page.matches(outside).count()
                - page.matches("http://www.w3.org/2000/svg").count()
                    * usize::from(outside == "http://");
            assert_eq!(hits, 0, "the page refers to `{outside}`");
        }
    }

    #[test]
    fn data_is_a_script_that_assigns_the_leaderboard() {
        let board = Leaderboard {
            format: "coreb-leaderboard/1",
            default_metric: "ndcg@10".into(),
            metrics: vec!["ndcg@10".into()],
            tasks: vec!["text2code".into()],
            categories: vec!["code".into()],
            groups: vec!["all".into()],
            months: vec![],
            releases: vec![],
            models: vec![super::super::ModelInfo {
                name: "</script><b>".into(),
                retriever: "run:x".into(),
                cutoff: None,
                category: None,
                records: 1,
                superseded: 0,
            }],
            cells: vec![],
        };
        let files = files(&board).unwrap();
        assert_eq!(files.iter().map(|f| f.0).collect::<Vec<_>>(), ["data.js", "index.html"]);
        let data = &files[0].1;
        assert!(data.starts_with("window.COREB_LEADERBOARD = {") && data.ends_with("};\n"));
        assert!(!data.contains("</script>"));
        let json: serde_json::Value = serde_json::from_str(
            data.trim_start_matches("window.COREB_LEADERBOARD = ").trim_end().trim_end_matches(';'),
        )
        .unwrap();
        assert_eq!(json["models"][0]["name"], "</script><b>");
    }
}
