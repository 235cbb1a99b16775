use hashbrown::HashMap;

#[cfg(test)]
use super::LangProfile;
use super::LangProfileList;
use super::utils::{TrigramsWithPositions, get_trigrams_with_positions};
use super::{ARABIC_LANGS, CYRILLIC_LANGS, DEVANAGARI_LANGS, HEBREW_LANGS, LATIN_LANGS};
use super::{MAX_TOTAL_DISTANCE, MAX_TRIGRAM_DISTANCE, Trigram};
use crate::Lang;
use crate::core::{FilterList, Info, InternalQuery, Text, calculate_confidence};
use crate::scripts::grouping::MultiLangScript;

#[derive(Debug)]
pub struct RawOutcome {
    pub trigrams_count: usize,
    #[allow(dead_code)]
    pub raw_distances: Vec<(Lang, u32)>,
    pub scores: Vec<(Lang, f64)>,
}

#[inline]
pub fn detect(iquery: &InternalQuery) -> Option<Info> {
    let raw_outcome = raw_detect(iquery);
    let RawOutcome {
        trigrams_count,
        scores,
        ..
    } = raw_outcome;

    let mut raw_scores_iter = scores.into_iter();

    let opt_lang_score1 = raw_scores_iter.next();
    let opt_lang_score2 = raw_scores_iter.next();

    // TODO: Logic is duplicated in alphabets. Consider refactoring
    opt_lang_score1.map(|(lang1, score1)| {
        let script = iquery.multi_lang_script.to_script();
        let confidence = if let Some((_, score2)) = opt_lang_score2 {
            calculate_confidence(score1, score2, trigrams_count)
        } else {
            1.0
        };
        Info::new(script, lang1, confidence)
    })
}

#[inline]
pub fn raw_detect(iquery: &InternalQuery) -> RawOutcome {
    let lang_profile_list = script_to_lang_profile_list(iquery.multi_lang_script);
    calculate_scores_in_profiles(&iquery.text, iquery.filter_list, lang_profile_list)
}

fn script_to_lang_profile_list(script: MultiLangScript) -> LangProfileList {
    use MultiLangScript as MLS;
    match script {
        MLS::Latin => LATIN_LANGS,
        MLS::Cyrillic => CYRILLIC_LANGS,
        MLS::Arabic => ARABIC_LANGS,
        MLS::Devanagari => DEVANAGARI_LANGS,
        MLS::Hebrew => HEBREW_LANGS,
    }
}

#[inline]
fn calculate_scores_in_profiles(
    text: &Text,
    filter_list: &FilterList,
    lang_profile_list: LangProfileList,
) -> RawOutcome {
    let mut lang_distances: Vec<(Lang, u32)> = vec![];

    let TrigramsWithPositions {
        trigram_positions, ..
    } = get_trigrams_with_positions(&text.lowercase());
    let unique_trigrams_count = trigram_positions.len();

    // whatlang-fast: every language's distance at once from the inverted index of the
    // profiles, equal to `calculate_distance` of each profile (kept below for the tests).
    let distances = distances_from_index(lang_profile_list, &trigram_positions);
    for (&(lang, _), dist) in lang_profile_list.iter().zip(distances) {
        if !filter_list.is_allowed(lang) {
            continue;
        }
        lang_distances.push(((lang), dist));
    }

    // Sort languages by distance
    lang_distances.sort_unstable_by_key(|(_, dist)| *dist);

    let max_dist = unique_trigrams_count as u32 * MAX_TRIGRAM_DISTANCE;

    let raw_scores = lang_distances
        .iter()
        .map(|&(lang, distance)| (lang, distance_to_raw_score(distance, max_dist)))
        .collect();

    RawOutcome {
        trigrams_count: unique_trigrams_count,
        scores: raw_scores,
        raw_distances: lang_distances,
    }
}

/// Trigram → every `(language index, position)` where it appears in a profile list.
struct ProfileIndex {
    postings: HashMap<Trigram, Vec<(u16, u16)>>,
    lens: Vec<u32>,
}

impl ProfileIndex {
    fn new(list: LangProfileList) -> ProfileIndex {
        let mut postings: HashMap<Trigram, Vec<(u16, u16)>> = HashMap::new();
        for (l, &(_, profile)) in list.iter().enumerate() {
            for (i, &trigram) in profile.iter().enumerate() {
                postings
                    .entry(trigram)
                    .or_default()
                    .push((l as u16, i as u16));
            }
        }
        ProfileIndex {
            postings,
            lens: list.iter().map(|(_, p)| p.len() as u32).collect(),
        }
    }
}

fn profile_index(list: LangProfileList) -> &'static ProfileIndex {
    use std::sync::OnceLock;
    static INDEXES: OnceLock<Vec<(usize, ProfileIndex)>> = OnceLock::new();
    let all = INDEXES.get_or_init(|| {
        [
            LATIN_LANGS,
            CYRILLIC_LANGS,
            ARABIC_LANGS,
            DEVANAGARI_LANGS,
            HEBREW_LANGS,
        ]
        .iter()
        .map(|l| (l.as_ptr() as usize, ProfileIndex::new(l)))
        .collect()
    });
    &all.iter()
        .find(|(p, _)| *p == list.as_ptr() as usize)
        .expect("one of the script profile lists")
        .1
}

/// `calculate_distance` of every profile of `list`, in list order: a profile trigram at
/// position `i` found at text position `n` costs `|n - i|`, a missing one the maximum; only
/// the text's trigrams are looked up.
fn distances_from_index(list: LangProfileList, text_trigrams: &HashMap<Trigram, u32>) -> Vec<u32> {
    let index = profile_index(list);
    let mut totals: Vec<i64> = index
        .lens
        .iter()
        .map(|&len| i64::from(len) * i64::from(MAX_TRIGRAM_DISTANCE))
        .collect();
    for (trigram, &n) in text_trigrams {
        if let Some(posts) = index.postings.get(trigram) {
            for &(l, i) in posts {
                totals[l as usize] +=
                    (n as i64 - i64::from(i)).abs() - i64::from(MAX_TRIGRAM_DISTANCE);
            }
        }
    }
    let count = text_trigrams.len() as u32;
    totals
        .into_iter()
        .map(|t| {
            let mut total_dist = t as u32;
            if MAX_TRIGRAM_DISTANCE > count {
                // As upstream's `-=` in a release build.
                total_dist =
                    total_dist.wrapping_sub((MAX_TRIGRAM_DISTANCE - count) * MAX_TRIGRAM_DISTANCE);
            }
            total_dist.clamp(0, MAX_TOTAL_DISTANCE)
        })
        .collect()
}

#[cfg(test)]
#[test]
fn the_index_gives_upstreams_distances() {
    for text in [
        "Die Ordnung muss für immer in diesem Codebase bleiben",
        "how do i read a json file in python",
        "Привет, как дела? Всё хорошо",
        "x",
        "",
    ] {
        let trigram_positions =
            get_trigrams_with_positions(&crate::core::LowercaseText::new(text)).trigram_positions;
        for list in [
            LATIN_LANGS,
            CYRILLIC_LANGS,
            ARABIC_LANGS,
            DEVANAGARI_LANGS,
            HEBREW_LANGS,
        ] {
            let direct: Vec<u32> = list
                .iter()
                .map(|&(_, p)| calculate_distance(p, &trigram_positions))
                .collect();
            assert_eq!(
                distances_from_index(list, &trigram_positions),
                direct,
                "{text}"
            );
        }
    }
}

#[cfg(test)]
fn calculate_distance(lang_trigrams: LangProfile, text_trigrams: &HashMap<Trigram, u32>) -> u32 {
    let mut total_dist = 0u32;

    for (i, &trigram) in lang_trigrams.iter().enumerate() {
        let dist = match text_trigrams.get(&trigram) {
            Some(&n) => (n as i32 - i as i32).unsigned_abs(),
            None => MAX_TRIGRAM_DISTANCE,
        };
        total_dist += dist;
    }

    let count = text_trigrams.len() as u32;

    if MAX_TRIGRAM_DISTANCE > count {
        let delta = MAX_TRIGRAM_DISTANCE - count;
        total_dist -= delta * MAX_TRIGRAM_DISTANCE;
    }

    total_dist.clamp(0, MAX_TOTAL_DISTANCE)
}

#[inline]
fn distance_to_raw_score(distance: u32, max_distance: u32) -> f64 {
    let similarity = max_distance - distance;
    similarity as f64 / max_distance as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_when_german_is_given() {
        let text = "Die Ordnung muss für immer in diesem Codebase bleiben";
        let iq = InternalQuery {
            text: Text::new(text),
            filter_list: &FilterList::default(),
            multi_lang_script: MultiLangScript::Latin,
        };
        let raw_outcome = raw_detect(&iq);

        assert_eq!(raw_outcome.trigrams_count, 50);

        let &(first_lang, first_score) = raw_outcome.scores.first().unwrap();
        let &(_last_lang, last_score) = raw_outcome.scores.last().unwrap();

        assert_eq!(first_lang, Lang::Deu);

        assert!(first_score >= 0.0);
        assert!(first_score <= 1.0);

        assert!(last_score >= 0.0);
        assert!(last_score <= 1.0);
    }
}
