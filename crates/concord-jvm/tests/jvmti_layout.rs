//! The hand-written JVMTI bindings against each JDK's own `jvmti.h`: a small C program
//! compiled with `cc` prints `offsetof` of every function-table entry and callback slot the
//! agent uses, the position of `can_generate_garbage_collection_events` and the event
//! numbers; they must equal `concord_jvm::jvmti`.

use std::path::{Path, PathBuf};
use std::process::Command;

use concord_jvm::jvmti::{
    event, Capabilities, EventCallbacks, CAN_GENERATE_GARBAGE_COLLECTION_EVENTS, FUNCTIONS,
    JVMTI_ENABLE, JVMTI_VERSION_1_2,
};

/// The callback slots used: (field in jvmtiEventCallbacks, event constant name, our number).
const CALLBACKS: &[(&str, &str, i32)] = &[
    ("VMInit", "JVMTI_EVENT_VM_INIT", event::VM_INIT),
    ("VMDeath", "JVMTI_EVENT_VM_DEATH", event::VM_DEATH),
    (
        "ThreadStart",
        "JVMTI_EVENT_THREAD_START",
        event::THREAD_START,
    ),
    ("ThreadEnd", "JVMTI_EVENT_THREAD_END", event::THREAD_END),
    (
        "GarbageCollectionStart",
        "JVMTI_EVENT_GARBAGE_COLLECTION_START",
        event::GARBAGE_COLLECTION_START,
    ),
    (
        "GarbageCollectionFinish",
        "JVMTI_EVENT_GARBAGE_COLLECTION_FINISH",
        event::GARBAGE_COLLECTION_FINISH,
    ),
];

/// Compile and run the probe against the JDK at `home`; its output lines are `name value`.
fn probe(home: &str) -> Vec<(String, i64)> {
    let include = Path::new(home).join("include");
    assert!(
        include.join("jvmti.h").exists(),
        "{}/jvmti.h is missing",
        include.display()
    );
    let mut c = String::from(
        "#include <stdio.h>\n#include <stddef.h>\n#include <string.h>\n#include <jvmti.h>\n\
         int main(void) {\n",
    );
    for (name, _) in FUNCTIONS {
        c += &format!(
            "  printf(\"fn.{name} %zu\\n\", offsetof(struct jvmtiInterface_1_, {name}));\n"
        );
    }
    for (field, constant, _) in CALLBACKS {
        c += &format!(
            "  printf(\"cb.{field} %zu\\n\", offsetof(jvmtiEventCallbacks, {field}));\n\
             printf(\"ev.{field} %d\\n\", (int){constant});\n"
        );
    }
    c += "  { jvmtiCapabilities caps; unsigned int words[4]; memset(&caps, 0, sizeof caps);\n\
            caps.can_generate_garbage_collection_events = 1; memcpy(words, &caps, sizeof words);\n\
            printf(\"caps.size %zu\\n\", sizeof caps);\n\
            for (int i = 0; i < 4; i++) printf(\"caps.word%d %u\\n\", i, words[i]); }\n\
          printf(\"JVMTI_VERSION_1_2 %d\\n\", (int)JVMTI_VERSION_1_2);\n\
          printf(\"JVMTI_ENABLE %d\\n\", (int)JVMTI_ENABLE);\n\
          return 0;\n}\n";
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("jvmti-layout")
        .join(format!(
            "{}-{}",
            Path::new(home).file_name().unwrap().to_string_lossy(),
            std::process::id()
        ));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("probe.c");
    let exe = dir.join("probe");
    std::fs::write(&src, c).unwrap();
    let out = Command::new("cc")
        .arg("-I")
        .arg(&include)
        .arg("-I")
        .arg(include.join("linux"))
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .output()
        .expect("cc runs");
    assert!(
        out.status.success(),
        "cc failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = Command::new(&exe).output().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let (k, v) = l.split_once(' ').unwrap();
            (k.to_string(), v.parse().unwrap())
        })
        .collect()
}

fn check_against(home: &str) {
    let got = probe(home);
    let value = |key: &str| -> i64 {
        got.iter()
            .find(|(k, _)| k == key)
            .unwrap_or_else(|| panic!("{key} not printed"))
            .1
    };
    for (name, number) in FUNCTIONS {
        assert_eq!(
            value(&format!("fn.{name}")),
            ((number - 1) * std::mem::size_of::<usize>()) as i64,
            "{name} in {home}"
        );
    }
    for (field, _, ours) in CALLBACKS {
        assert_eq!(
            value(&format!("ev.{field}")),
            *ours as i64,
            "{field} in {home}"
        );
        assert_eq!(
            value(&format!("cb.{field}")),
            EventCallbacks::slot_offset(*ours) as i64,
            "{field} in {home}"
        );
    }
    let caps = Capabilities::default().with(CAN_GENERATE_GARBAGE_COLLECTION_EVENTS);
    assert_eq!(
        value("caps.size"),
        std::mem::size_of::<Capabilities>() as i64
    );
    for (i, word) in caps.words.iter().enumerate() {
        assert_eq!(
            value(&format!("caps.word{i}")),
            *word as i64,
            "word {i} in {home}"
        );
    }
    assert_eq!(value("JVMTI_VERSION_1_2"), JVMTI_VERSION_1_2 as i64);
    assert_eq!(value("JVMTI_ENABLE"), JVMTI_ENABLE as i64);
}

#[test]
#[cfg_attr(
    no_jdk17,
    ignore = "needs JDK 17 in /usr/lib/jvm/java-17-openjdk-amd64 (java, javac, jcmd, include/jvmti.h) when the tests were built: apt-get install openjdk-17-jdk-headless (.ci/run does)"
)]
fn bindings_match_the_jdk17_header() {
    check_against("/usr/lib/jvm/java-17-openjdk-amd64");
}

#[test]
#[cfg_attr(
    no_jdk25,
    ignore = "JDK 25 is not installed at /usr/lib/jvm/temurin-25-jdk-amd64"
)]
fn bindings_match_the_jdk25_header() {
    check_against("/usr/lib/jvm/temurin-25-jdk-amd64");
}
