//! `libconcord_jvm.so`: a JVMTI agent that brings Concord's OS-level fixes to unmodified
//! HotSpot JVMs (issue 12): GC-thread affinity (000 Algorithm 1, or a static spread) and
//! SCHED_FIFO mutator scheduling (001), with per-GC records and a report at VM death.
//!
//! Load it with `-agentpath:/path/libconcord_jvm.so=<options>` (see [`options`]) or at run
//! time with `jcmd PID JVMTI.agent_load /path/libconcord_jvm.so <options>`. The policies are
//! Concord's own (`concord::os`), not copies. As an rlib the crate also gives the CLI the
//! option grammar ([`options::AgentOptions`]) and the report's shape ([`report::Report`]).
//!
//! One copy acts per JVM. A second load of the same file is refused by [`AGENT`]; a copy of
//! the library under another path has statics of its own, so the first copy to load claims
//! the process with an abstract Unix socket named after the process ([`claim_process`]),
//! which any copy can see and which the kernel releases when the process ends; a later copy
//! finds the name taken and stays passive, saying so.

pub mod agent;
pub mod jvmti;
pub mod options;
pub mod report;
pub mod threads;

use std::ffi::{c_char, c_void, CStr};
use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::{Mutex, OnceLock};

use agent::{Agent, VmInfo};
use jvmti::{event, jint, Capabilities, EventCallbacks, JNIEnv, JThread, JavaVM, Jvmti, JvmtiEnv};
use jvmti::{CAN_GENERATE_GARBAGE_COLLECTION_EVENTS, JNI_ERR, JNI_OK};
use options::AgentOptions;

/// The name of a symbol only this library exports, so that a tool can tell a copy of the agent
/// under any file name from another JVMTI agent (`concord jvm run` refuses a second copy).
pub const MARKER_SYMBOL: &str = "CONCORD_JVM_AGENT_MARKER";

/// Exported under [`MARKER_SYMBOL`] (the library's dynamic symbol table names it).
#[no_mangle]
pub static CONCORD_JVM_AGENT_MARKER: [u8; 12] = *b"concord-jvm\0";

/// The agent of this JVM (one per process; a second load is refused).
static AGENT: OnceLock<Agent> = OnceLock::new();

/// This copy's claim on the process (see the crate documentation), held while its agent runs
/// and given up when a load fails (the JVM unloads the library then, statics and all).
static CLAIM: Mutex<Option<OwnedFd>> = Mutex::new(None);

/// Gives up the claim after a failed load, unless this copy's agent is running.
fn release_claim_unless_running() {
    if AGENT.get().is_none() {
        CLAIM.lock().unwrap_or_else(|p| p.into_inner()).take();
    }
}

/// Why this process cannot be claimed: another copy of the agent holds it.
const ANOTHER_COPY: &str = "another copy of the Concord agent (libconcord_jvm.so, loaded from \
     another path) is already active in this JVM";

/// Claims the process for this copy of the agent: binds the abstract Unix socket
/// `concord-jvm-agent:PID:PIDNS` (the PID namespace's inode makes the name unique across
/// containers that share a network namespace). `Err` with the reason when another copy holds
/// it; `Ok(None)` when the socket cannot be made at all (then copies cannot be told apart).
fn claim_process() -> Result<Option<OwnedFd>, String> {
    let namespace = std::fs::read_link("/proc/self/ns/pid")
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    let name = format!("concord-jvm-agent:{}:{namespace}", std::process::id());
    // SAFETY: socket(2) takes three integers and returns a new descriptor or -1.
    let fd = unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Ok(None);
    }
    // SAFETY: `fd` is a descriptor this function just opened and nothing else owns.
    let socket = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: an all-zero sockaddr_un is valid (an empty abstract name until filled below).
    let mut address: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    address.sun_family = libc::AF_UNIX as libc::sa_family_t;
    // sun_path[0] stays 0: an abstract name, in no file system, gone with the process.
    let bytes = name.as_bytes();
    let room = address.sun_path.len() - 1;
    let used = bytes.len().min(room);
    for (slot, byte) in address.sun_path[1..=used].iter_mut().zip(bytes) {
        *slot = *byte as libc::c_char;
    }
    let length = std::mem::size_of::<libc::sa_family_t>() + 1 + used;
    // SAFETY: `address` is a valid sockaddr_un and `length` covers only its initialised
    // family and name bytes.
    let rc = unsafe {
        libc::bind(
            fd,
            (&address as *const libc::sockaddr_un).cast(),
            length as libc::socklen_t,
        )
    };
    if rc == 0 {
        return Ok(Some(socket));
    }
    match std::io::Error::last_os_error().raw_os_error() {
        Some(libc::EADDRINUSE) => Err(ANOTHER_COPY.to_string()),
        _ => Ok(None),
    }
}

/// This copy of the library stays passive because of `reason` (another copy acts): said on
/// stderr and in the outcome file; the load succeeds at start-up (the JVM runs, with the
/// other copy) and fails on attach (so that jcmd reports it).
fn stay_passive(reason: &str, options: &AgentOptions, attached: bool) -> jint {
    eprintln!(
        "concord-jvm: {reason}: this copy stays passive (no policies, records or report of \
         its own); load the agent once per JVM"
    );
    if let Some(path) = &options.outcome {
        let outcome = report::Outcome {
            passive: Some(reason.to_string()),
            failures: Vec::new(),
        };
        if let Err(e) = agent::write_outcome(path, &outcome) {
            eprintln!("concord-jvm: cannot write '{}': {e}", path.display());
        }
    }
    if attached {
        JNI_ERR
    } else {
        JNI_OK
    }
}

fn fail(message: &str) -> jint {
    eprintln!("concord-jvm: {message}");
    JNI_ERR
}

/// `Agent_OnLoad` and `Agent_OnAttach` share this.
///
/// # Safety
/// `vm` is the JVM's `JavaVM*`; `options` is NULL or a NUL-terminated string.
unsafe fn load(vm: *mut JavaVM, options: *const c_char, attached: bool) -> jint {
    let text = if options.is_null() {
        None
    } else {
        // SAFETY: the JVM passes a NUL-terminated option string that lives for the call.
        match unsafe { CStr::from_ptr(options) }.to_str() {
            Ok(t) => Some(t.to_owned()),
            Err(_) => return fail("the options are not UTF-8; allowed: ASCII key=value pairs"),
        }
    };
    let options = match AgentOptions::parse(text.as_deref()) {
        Ok(o) => o,
        Err(e) => return fail(&e.to_string()),
    };
    if let Err(e) = options
        .check_supported()
        .and_then(|()| options.check_distinct_outputs())
    {
        return fail(&e.to_string());
    }
    if AGENT.get().is_some() {
        return stay_passive(
            "the agent is already loaded in this JVM",
            &options,
            attached,
        );
    }
    match claim_process() {
        Ok(Some(claim)) => {
            *CLAIM.lock().unwrap_or_else(|p| p.into_inner()) = Some(claim);
        }
        Ok(None) => {}
        Err(reason) => return stay_passive(&reason, &options, attached),
    }
    // SAFETY: `vm` is the JVM's own pointer (this function's contract).
    let jvmti = match unsafe { Jvmti::from_vm(vm) } {
        Ok(j) => j,
        Err(e) => return fail(&e),
    };
    let property = |name: &CStr| jvmti.system_property(name).unwrap_or_default();
    let mut jdk = property(c"java.vm.version");
    if jdk.is_empty() {
        jdk = property(c"java.version");
    }
    let vm_info = VmInfo {
        jdk,
        vm_name: property(c"java.vm.name"),
        vm_vendor: property(c"java.vm.vendor"),
    };
    let agent = match Agent::new(options, vm_info, attached) {
        Ok(a) => a,
        Err(e) => return fail(&e),
    };
    if AGENT.set(agent).is_err() {
        return fail("the agent is already loaded in this JVM; allowed: one load per JVM");
    }
    let Some(agent) = AGENT.get() else {
        return JNI_ERR;
    };
    if let Err(e) = agent.start_helper() {
        return fail(&e);
    }
    let gc_events = jvmti
        .potential_capabilities()
        .map(|p| p.has(CAN_GENERATE_GARBAGE_COLLECTION_EVENTS))
        .unwrap_or(false)
        && jvmti
            .add_capabilities(&Capabilities::default().with(CAN_GENERATE_GARBAGE_COLLECTION_EVENTS))
            .is_ok();
    if !gc_events {
        agent.notice(
            "this JVM does not offer can_generate_garbage_collection_events: no GC events, \
             gc-affinity stays passive"
                .into(),
        );
    }
    let mut callbacks = EventCallbacks::default();
    callbacks.set_thread_event(event::VM_INIT, on_vm_init);
    callbacks.set_vm_death(on_vm_death);
    callbacks.set_thread_event(event::THREAD_START, on_thread_start);
    callbacks.set_thread_event(event::THREAD_END, on_thread_end);
    callbacks.set_gc_event(event::GARBAGE_COLLECTION_START, on_gc_start);
    callbacks.set_gc_event(event::GARBAGE_COLLECTION_FINISH, on_gc_finish);
    if let Err(e) = jvmti.set_event_callbacks(&callbacks) {
        return fail(&e.to_string());
    }
    let mut events = vec![event::VM_DEATH];
    if !attached {
        events.push(event::VM_INIT);
    }
    if gc_events {
        events.extend([
            event::GARBAGE_COLLECTION_START,
            event::GARBAGE_COLLECTION_FINISH,
        ]);
    }
    if agent.wants_thread_events() {
        events.extend([event::THREAD_START, event::THREAD_END]);
    }
    for e in events {
        if let Err(err) = jvmti.enable_event(e) {
            return fail(&err.to_string());
        }
    }
    if attached {
        agent.guarded("Agent_OnAttach", |a| a.vm_started(false));
    }
    JNI_OK
}

/// Run `body` with the agent, if loaded, guarding against panics.
fn with_agent(name: &str, body: impl FnOnce(&Agent)) {
    if let Some(agent) = AGENT.get() {
        agent.guarded(name, body);
    }
}

/// Loaded at JVM start-up (`-agentpath:`).
///
/// # Safety
/// Called by the JVM with its `JavaVM*` and a NUL-terminated (or NULL) option string.
#[no_mangle]
pub unsafe extern "C" fn Agent_OnLoad(
    vm: *mut JavaVM,
    options: *mut c_char,
    _reserved: *mut c_void,
) -> jint {
    let outcome = std::panic::catch_unwind(|| {
        // SAFETY: forwarded from the JVM (this function's contract).
        unsafe { load(vm, options, false) }
    });
    let rc = outcome
        .unwrap_or_else(|_| fail("internal error while loading; the JVM is told the load failed"));
    if rc != JNI_OK {
        release_claim_unless_running();
    }
    rc
}

/// Loaded into a running JVM (`jcmd PID JVMTI.agent_load`).
///
/// # Safety
/// As [`Agent_OnLoad`].
#[no_mangle]
pub unsafe extern "C" fn Agent_OnAttach(
    vm: *mut JavaVM,
    options: *mut c_char,
    _reserved: *mut c_void,
) -> jint {
    let outcome = std::panic::catch_unwind(|| {
        // SAFETY: forwarded from the JVM (this function's contract).
        unsafe { load(vm, options, true) }
    });
    let rc = outcome.unwrap_or_else(|_| fail("internal error while attaching; the attach failed"));
    if rc != JNI_OK {
        release_claim_unless_running();
    }
    rc
}

/// The JVM unloads the agent (at exit): finish if `VMDeath` did not.
///
/// # Safety
/// Called by the JVM.
#[no_mangle]
pub unsafe extern "C" fn Agent_OnUnload(_vm: *mut JavaVM) {
    let _ = std::panic::catch_unwind(|| {
        if let Some(agent) = AGENT.get() {
            agent.finish();
        }
    });
}

unsafe extern "C" fn on_vm_init(_jvmti: *mut JvmtiEnv, _jni: *mut JNIEnv, _thread: JThread) {
    with_agent("VMInit", |a| a.vm_started(true));
}

unsafe extern "C" fn on_vm_death(_jvmti: *mut JvmtiEnv, _jni: *mut JNIEnv) {
    // Not through `guarded`: finishing must happen even after an earlier caught panic.
    let _ = std::panic::catch_unwind(|| {
        if let Some(agent) = AGENT.get() {
            agent.finish();
        }
    });
}

unsafe extern "C" fn on_thread_start(_jvmti: *mut JvmtiEnv, _jni: *mut JNIEnv, _thread: JThread) {
    with_agent("ThreadStart", Agent::thread_started);
}

unsafe extern "C" fn on_thread_end(_jvmti: *mut JvmtiEnv, _jni: *mut JNIEnv, _thread: JThread) {
    with_agent("ThreadEnd", Agent::thread_ended);
}

unsafe extern "C" fn on_gc_start(_jvmti: *mut JvmtiEnv) {
    with_agent("GarbageCollectionStart", Agent::gc_started);
}

unsafe extern "C" fn on_gc_finish(_jvmti: *mut JvmtiEnv) {
    with_agent("GarbageCollectionFinish", Agent::gc_finished);
}
