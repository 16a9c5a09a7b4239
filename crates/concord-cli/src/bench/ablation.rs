//! `concord ablation`: the 000 Fig. 10 experiment. One workload under `vanilla`, vanilla plus
//! each single fix, `modern` and `optimized`, alternating the configurations A B C … A B C …
//! in one invocation (so machine noise hits all of them alike), then a table of medians:
//! GC time, pause percentiles, root-task imbalance, steal attempts and failure rate.

use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use serde_json::json;

use super::{conclude, cpus_of, load_words, workload_plan, Stacked, Text};
use crate::experiment::simulated::simulate_arms;
use crate::experiment::{find_workload, Column, Variant};
use crate::flags::WorkloadBench;

/// Flags of `concord ablation`. Its own defaults: `--gc-threads` twice the usable CPUs (the GC
/// threads oversubscribe the cores as in the papers' stacking experiments), `--mutators 2`,
/// `--pin-start` true (so the configurations differ only in the parallel-phase switches).
#[derive(Args, Debug, Clone)]
pub struct AblationArgs {
    /// Only these configurations (comma-separated labels, e.g. vanilla,+adaptive-steal).
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<String>,
    #[command(flatten)]
    pub common: WorkloadBench,
}

/// The ablation set: vanilla, 000 Fig. 10's arms, vanilla with each single fix of the papers,
/// then the other presets. Every arm but the presets is vanilla plus the switches its label
/// names (checked by the tests from the configuration each run records).
pub const VARIANTS: &[Variant] = &[
    Variant {
        label: "vanilla",
        what: "OpenJDK 8: monitor queue, best-of-2, fixed termination, monitor parking",
        settings: &[("preset", "vanilla")],
    },
    Variant {
        label: "+affinity",
        what: "000 Fig. 10 'w/ GC-affinity': task affinity and dynamic GC thread affinity \
               (000 §4.1, Algorithm 1)",
        settings: &[
            ("preset", "vanilla"),
            ("task-affinity", "on"),
            ("gc-affinity", "dynamic"),
        ],
    },
    Variant {
        label: "+steal",
        what: "000 Fig. 10 'w/ steal': adaptive stealing with 2·N_live termination \
               (000 Algorithm 2)",
        settings: &[
            ("preset", "vanilla"),
            ("steal", "adaptive"),
            ("termination", "live"),
        ],
    },
    Variant {
        label: "together",
        what: "000 Fig. 10 'together': both of the above on the monitor queue (= preset suo18)",
        settings: &[
            ("preset", "vanilla"),
            ("task-affinity", "on"),
            ("gc-affinity", "dynamic"),
            ("steal", "adaptive"),
            ("termination", "live"),
        ],
    },
    Variant {
        label: "+task-affinity",
        what: "vanilla with task affinity (000 §4.1)",
        settings: &[("preset", "vanilla"), ("task-affinity", "on")],
    },
    Variant {
        label: "+gc-affinity",
        what: "vanilla with dynamic GC thread affinity (000 Algorithm 1)",
        settings: &[("preset", "vanilla"), ("gc-affinity", "dynamic")],
    },
    Variant {
        label: "+adaptive-steal",
        what: "vanilla with adaptive semi-random victim selection (000 Algorithm 2)",
        settings: &[("preset", "vanilla"), ("steal", "adaptive")],
    },
    Variant {
        label: "+live-termination",
        what: "vanilla with the 2·N_live threshold, HotSpot 8's waiting loop kept (000 §4.2)",
        settings: &[("preset", "vanilla"), ("termination", "live")],
    },
    Variant {
        label: "+concord-backoff",
        what: "vanilla with Concord's shorter termination waiting loop (in no paper)",
        settings: &[("preset", "vanilla"), ("termination-backoff", "concord")],
    },
    Variant {
        label: "+lockfree-queue",
        what: "vanilla with the lock-free task queue (004 §3.1.1)",
        settings: &[("preset", "vanilla"), ("task-queue", "lockfree")],
    },
    Variant {
        label: "+futex-parking",
        what: "vanilla with lazy futex parking (004 §3.1.2)",
        settings: &[("preset", "vanilla"), ("parking", "futex")],
    },
    Variant {
        label: "modern",
        what: "HotSpot 17+: claiming, last-victim, OWST",
        settings: &[("preset", "modern")],
    },
    Variant {
        label: "naps",
        what: "004's NAPS: lock-free queue, futex parking, fragmented young",
        settings: &[("preset", "naps")],
    },
    Variant {
        label: "optimized",
        what: "Concord's best: all of the parallel-phase fixes, Concord's termination loop",
        settings: &[("preset", "optimized")],
    },
];

/// The columns of the ablation table after the GC time and pauses (000 Fig. 10; also the
/// README's).
const COLUMNS: &[Column] = &[
    Column::Steals,
    Column::FailRate,
    Column::Imbalance,
    Column::Cpus,
    Column::Wall,
];

/// The switch flags the configurations set themselves.
const SET_BY_THE_CONFIGURATIONS: &[&str] = &[
    "task-queue",
    "task-affinity",
    "steal",
    "termination",
    "termination-backoff",
    "parking",
    "gc-affinity",
];

/// The variants `--only` names (all without it), or an error naming the allowed ones.
fn chosen_variants(only: &[String]) -> Result<Vec<&'static Variant>> {
    if only.is_empty() {
        return Ok(VARIANTS.iter().collect());
    }
    only.iter()
        .map(|label| {
            VARIANTS
                .iter()
                .find(|v| v.label == label.trim())
                .with_context(|| {
                    let labels: Vec<&str> = VARIANTS.iter().map(|v| v.label).collect();
                    format!(
                        "--only: unknown configuration '{label}' (allowed: {})",
                        labels.join(", ")
                    )
                })
        })
        .collect()
}

/// Run `concord ablation`.
pub fn run(args: AblationArgs) -> Result<ExitCode> {
    let flags = &args.common;
    let workload = find_workload(&flags.workload.workload)?;
    let variants = chosen_variants(&args.only)?;
    flags.run.refuse(
        "ablation",
        SET_BY_THE_CONFIGURATIONS,
        "each configuration sets it (vanilla plus one fix)",
    )?;
    let sim = flags.sim.check()?;
    let stacked = Stacked::new(flags, &workload, cpus_of(sim.as_deref()));
    let load = flags.run.interfere;
    let arms = variants
        .iter()
        .map(|v| stacked.arm(v, 0, &workload, load))
        .collect::<Result<_>>()?;
    let arms = simulate_arms(arms, sim.as_ref())?;
    let mut plan = workload_plan("ablation", flags, &workload, arms);
    stacked.describe_in(&mut plan);
    plan.parameters
        .insert("interference".into(), json!(load.map(|l| l.to_string())));
    let load_words = match load {
        Some(load) => format!(", {}", load_words(load, sim.is_some())),
        None => String::new(),
    };
    let header = format!(
        "concord ablation {}: {}{load_words}, medians of {} alternating runs each",
        plan.workload,
        stacked.words(),
        plan.repeat
    );
    let note = "ratio: GC time relative to the first row; imbal.: most root tasks one worker ran \
                over the mean per worker; CPUs: distinct CPUs the GC workers were seen on per \
                collection.";
    let text = Text::new(header, [Column::GC_AND_PAUSES, COLUMNS].concat(), note);
    conclude(&plan, &flags.bench, |_, _| {}, |_| text)
}

#[cfg(test)]
mod tests {
    use concord::{GcConfig, Preset};

    use super::*;
    use crate::experiment::arm::build_config;
    use crate::summary::switches;

    /// The switches (as the summary records them) in which `config` differs from `base`.
    fn differing_switches(config: &GcConfig, base: &GcConfig) -> Vec<&'static str> {
        let (mine, theirs) = (switches(config), switches(base));
        let mut keys: Vec<&str> = mine
            .iter()
            .zip(&theirs)
            .filter(|(a, b)| a != b)
            .map(|(a, _)| a.0)
            .collect();
        for (key, differs) in [
            ("numa", config.numa != base.numa),
            ("thp", config.thp != base.thp),
            (
                "dynamic-gc-threads",
                config.dynamic_gc_threads != base.dynamic_gc_threads,
            ),
            ("gc-log-mode", config.gc_log_mode != base.gc_log_mode),
        ] {
            if differs {
                keys.push(key);
            }
        }
        keys
    }

    fn config(v: &Variant) -> GcConfig {
        let mut settings = v.settings();
        settings.extend([("heap", "32m".to_string()), ("gc-threads", "4".to_string())]);
        build_config(&settings).unwrap()
    }

    #[test]
    fn every_arm_differs_from_vanilla_in_exactly_the_switches_its_label_names() {
        use std::collections::BTreeSet;
        let vanilla = config(&VARIANTS[0]);
        let expected: &[(&str, &[&str])] = &[
            ("vanilla", &[]),
            ("+affinity", &["task-affinity", "gc-affinity"]),
            ("+steal", &["steal", "termination"]),
            (
                "together",
                &["task-affinity", "steal", "termination", "gc-affinity"],
            ),
            ("+task-affinity", &["task-affinity"]),
            ("+gc-affinity", &["gc-affinity"]),
            ("+adaptive-steal", &["steal"]),
            ("+live-termination", &["termination"]),
            ("+concord-backoff", &["termination-backoff"]),
            ("+lockfree-queue", &["task-queue"]),
            ("+futex-parking", &["parking"]),
        ];
        for (label, keys) in expected {
            let v = VARIANTS.iter().find(|v| v.label == *label).unwrap();
            let c = config(v);
            assert_eq!(c.gc_threads, 4, "{label}");
            let got: BTreeSet<_> = differing_switches(&c, &vanilla).into_iter().collect();
            assert_eq!(got, keys.iter().copied().collect(), "{label}");
            // Nothing else differs either.
            let mut same = c.clone();
            same.phase = vanilla.phase;
            same.parking = vanilla.parking;
            same.gc_affinity = vanilla.gc_affinity;
            assert_eq!(same, vanilla, "{label}: only switches differ");
        }
        // Every arm built on vanilla is listed above; the rest are presets.
        for v in VARIANTS {
            let on_vanilla = v.settings[0] == ("preset", "vanilla");
            let listed = expected.iter().any(|(label, _)| *label == v.label);
            assert_eq!(on_vanilla, listed, "{}", v.label);
            if !on_vanilla {
                assert_eq!(v.settings, &[("preset", v.label)]);
            }
        }
        // 000 Fig. 10's 'together' is exactly the suo18 preset.
        let together = config(VARIANTS.iter().find(|v| v.label == "together").unwrap());
        let suo18 = config(&Variant {
            label: "suo18",
            what: "",
            settings: &[("preset", "suo18")],
        });
        assert_eq!(differing_switches(&together, &suo18), Vec::<&str>::new());
        assert_eq!(
            GcConfig {
                preset: Preset::Suo18,
                ..together
            },
            suo18
        );
    }

    #[test]
    fn only_and_refused_flags_name_what_is_allowed() {
        assert_eq!(chosen_variants(&[]).unwrap().len(), VARIANTS.len());
        let two = chosen_variants(&["vanilla".into(), " +gc-affinity".into()]).unwrap();
        assert_eq!(two[1].label, "+gc-affinity");
        let err = chosen_variants(&["fast".into()]).unwrap_err().to_string();
        assert!(err.contains("unknown configuration 'fast' (allowed: vanilla, +affinity, +steal"));
        let args: AblationArgs = crate::flags::tests_support::parse(&["--steal", "adaptive"]);
        let err = args
            .common
            .run
            .refuse("ablation", SET_BY_THE_CONFIGURATIONS, "it is set")
            .unwrap_err();
        assert!(err
            .to_string()
            .starts_with("--steal cannot be used with ablation"));
    }
}
