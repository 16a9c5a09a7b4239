//! Minimal JVMTI bindings, written against `jvmti.h` of JDK 17 and 25 for only what the agent
//! calls. No well-kept crate covers JVMTI (`jvmti-sys` 0.1 is a 2016 snapshot); `jni-sys`
//! gives the JNI types.
//!
//! The function table (`struct jvmtiInterface_1_`) is a C struct of pointers; the header
//! numbers its entries from 1 (entry 1 is reserved), so the function numbered `n` sits at
//! byte offset `(n - 1) × 8`. [`FUNCTIONS`] lists the numbers used, and the test
//! `tests/jvmti_layout.rs` compiles a C file against each JDK's header and compares every
//! `offsetof` with it, together with the event-callback slots and the capability bit.

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};

pub use jni_sys::{jint, jobject, JNIEnv, JavaVM, JNI_ERR, JNI_OK};

/// `jthread` is a `jobject`.
pub type JThread = jobject;
/// `jvmtiError`: 0 is `JVMTI_ERROR_NONE`.
pub type JvmtiError = c_int;

/// `JVMTI_VERSION_1_2`, the version the agent asks `GetEnv` for (every JDK since 7 has it).
pub const JVMTI_VERSION_1_2: jint = 0x3001_0200;
/// `JVMTI_ENABLE`.
pub const JVMTI_ENABLE: c_int = 1;
/// `JVMTI_ERROR_NONE`.
pub const JVMTI_ERROR_NONE: JvmtiError = 0;

/// Event numbers (`jvmtiEvent`) the agent enables.
pub mod event {
    use std::ffi::c_int;
    /// `JVMTI_EVENT_VM_INIT`, also the first callback slot (`JVMTI_MIN_EVENT_TYPE_VAL`).
    pub const VM_INIT: c_int = 50;
    /// `JVMTI_EVENT_VM_DEATH`.
    pub const VM_DEATH: c_int = 51;
    /// `JVMTI_EVENT_THREAD_START`.
    pub const THREAD_START: c_int = 52;
    /// `JVMTI_EVENT_THREAD_END`.
    pub const THREAD_END: c_int = 53;
    /// `JVMTI_EVENT_GARBAGE_COLLECTION_START`.
    pub const GARBAGE_COLLECTION_START: c_int = 81;
    /// `JVMTI_EVENT_GARBAGE_COLLECTION_FINISH`.
    pub const GARBAGE_COLLECTION_FINISH: c_int = 82;
}

/// The header's numbers of the functions the agent calls (entry `n` is at `(n-1)·8` bytes).
pub mod function {
    /// `SetEventNotificationMode`.
    pub const SET_EVENT_NOTIFICATION_MODE: usize = 2;
    /// `Deallocate`.
    pub const DEALLOCATE: usize = 47;
    /// `SetEventCallbacks`.
    pub const SET_EVENT_CALLBACKS: usize = 122;
    /// `DisposeEnvironment`.
    pub const DISPOSE_ENVIRONMENT: usize = 127;
    /// `GetSystemProperty`.
    pub const GET_SYSTEM_PROPERTY: usize = 131;
    /// `GetPotentialCapabilities`.
    pub const GET_POTENTIAL_CAPABILITIES: usize = 140;
    /// `AddCapabilities`.
    pub const ADD_CAPABILITIES: usize = 142;
}

/// Each used function with its header name, for the layout test.
pub const FUNCTIONS: &[(&str, usize)] = &[
    (
        "SetEventNotificationMode",
        function::SET_EVENT_NOTIFICATION_MODE,
    ),
    ("Deallocate", function::DEALLOCATE),
    ("SetEventCallbacks", function::SET_EVENT_CALLBACKS),
    ("DisposeEnvironment", function::DISPOSE_ENVIRONMENT),
    ("GetSystemProperty", function::GET_SYSTEM_PROPERTY),
    (
        "GetPotentialCapabilities",
        function::GET_POTENTIAL_CAPABILITIES,
    ),
    ("AddCapabilities", function::ADD_CAPABILITIES),
];

/// Entries in our view of the function table: up to the last function used.
const TABLE_LEN: usize = function::ADD_CAPABILITIES;

/// The JVMTI function table, as far as the agent reads it.
#[repr(C)]
pub struct JvmtiInterface {
    entries: [*const c_void; TABLE_LEN],
}

/// `jvmtiEnv` is a pointer to the function table.
pub type JvmtiEnv = *const JvmtiInterface;

/// `jvmtiCapabilities`: 128 bits of flags.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Capabilities {
    /// The bit-fields, in the order the header declares them (32 per word, low bit first).
    pub words: [c_uint; 4],
}

/// `can_generate_garbage_collection_events`: the 32nd flag of `jvmtiCapabilities`.
pub const CAN_GENERATE_GARBAGE_COLLECTION_EVENTS: (usize, u32) = (0, 31);

impl Capabilities {
    /// Whether flag `(word, bit)` is set.
    pub fn has(&self, (word, bit): (usize, u32)) -> bool {
        self.words[word] & (1 << bit) != 0
    }

    /// These capabilities with flag `(word, bit)` set.
    pub fn with(mut self, (word, bit): (usize, u32)) -> Self {
        self.words[word] |= 1 << bit;
        self
    }
}

/// `jvmtiEventVMInit`, `jvmtiEventThreadStart`, `jvmtiEventThreadEnd`.
pub type ThreadEventFn = unsafe extern "C" fn(*mut JvmtiEnv, *mut JNIEnv, JThread);
/// `jvmtiEventVMDeath`.
pub type VmDeathFn = unsafe extern "C" fn(*mut JvmtiEnv, *mut JNIEnv);
/// `jvmtiEventGarbageCollectionStart` / `Finish`.
pub type GcEventFn = unsafe extern "C" fn(*mut JvmtiEnv);

/// Callback slots up to `GarbageCollectionFinish` (slot `event - 50`); `SetEventCallbacks`
/// takes the size, and the JVM treats the slots beyond it as empty.
pub const CALLBACK_SLOTS: usize = (event::GARBAGE_COLLECTION_FINISH - event::VM_INIT + 1) as usize;

/// `jvmtiEventCallbacks`, as far as the agent fills it.
#[repr(C)]
pub struct EventCallbacks {
    slots: [*const c_void; CALLBACK_SLOTS],
}

impl Default for EventCallbacks {
    fn default() -> Self {
        Self {
            slots: [std::ptr::null(); CALLBACK_SLOTS],
        }
    }
}

impl EventCallbacks {
    /// Byte offset of `event`'s slot (for the layout test).
    pub fn slot_offset(event: c_int) -> usize {
        (event - event::VM_INIT) as usize * std::mem::size_of::<*const c_void>()
    }

    fn set(&mut self, event: c_int, f: *const c_void) {
        self.slots[(event - event::VM_INIT) as usize] = f;
    }

    /// Set the `VMInit`, `ThreadStart` or `ThreadEnd` callback.
    pub fn set_thread_event(&mut self, event: c_int, f: ThreadEventFn) {
        debug_assert!(matches!(
            event,
            event::VM_INIT | event::THREAD_START | event::THREAD_END
        ));
        self.set(event, f as *const c_void);
    }

    /// Set the `VMDeath` callback.
    pub fn set_vm_death(&mut self, f: VmDeathFn) {
        self.set(event::VM_DEATH, f as *const c_void);
    }

    /// Set the `GarbageCollectionStart` or `Finish` callback.
    pub fn set_gc_event(&mut self, event: c_int, f: GcEventFn) {
        debug_assert!(matches!(
            event,
            event::GARBAGE_COLLECTION_START | event::GARBAGE_COLLECTION_FINISH
        ));
        self.set(event, f as *const c_void);
    }
}

/// A JVMTI call that did not return `JVMTI_ERROR_NONE`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallError {
    /// The function.
    pub function: &'static str,
    /// The `jvmtiError` number.
    pub code: JvmtiError,
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "JVMTI {} failed with error {}", self.function, self.code)
    }
}

fn check(function: &'static str, code: JvmtiError) -> Result<(), CallError> {
    match code {
        JVMTI_ERROR_NONE => Ok(()),
        code => Err(CallError { function, code }),
    }
}

/// A JVMTI environment obtained from `GetEnv`. Valid until `DisposeEnvironment` or VM exit;
/// JVMTI functions may be called from any thread.
#[derive(Clone, Copy, Debug)]
pub struct Jvmti {
    env: *mut JvmtiEnv,
}

// SAFETY: a jvmtiEnv may be used from any thread (JVMTI spec, "Environments"); the pointer is
// only passed back to the JVM.
unsafe impl Send for Jvmti {}
// SAFETY: as above; the functions used are thread-safe.
unsafe impl Sync for Jvmti {}

impl Jvmti {
    /// The JVMTI environment of `vm`.
    ///
    /// # Safety
    /// `vm` must be the `JavaVM*` the JVM passed to `Agent_OnLoad` / `Agent_OnAttach`.
    pub unsafe fn from_vm(vm: *mut JavaVM) -> Result<Self, String> {
        let mut env: *mut c_void = std::ptr::null_mut();
        // SAFETY: the caller passes the JVM's own JavaVM*, whose invoke interface is valid.
        let get_env = unsafe { (**vm).GetEnv };
        let Some(get_env) = get_env else {
            return Err("the JavaVM has no GetEnv".into());
        };
        // SAFETY: GetEnv writes one pointer to `env`, which is valid for writing.
        let rc = unsafe { get_env(vm, &mut env, JVMTI_VERSION_1_2) };
        if rc != JNI_OK || env.is_null() {
            return Err(format!("GetEnv(JVMTI 1.2) failed with {rc}"));
        }
        Ok(Self { env: env.cast() })
    }

    /// The function numbered `n` in the header, as a raw pointer.
    fn entry(&self, n: usize) -> *const c_void {
        // SAFETY: `env` points at the JVM's function table, which has at least TABLE_LEN
        // entries in every JVMTI 1.2+ implementation; `n` is one of `function::*` ≤ TABLE_LEN.
        unsafe { (**self.env).entries[n - 1] }
    }

    /// `AddCapabilities`.
    pub fn add_capabilities(&self, caps: &Capabilities) -> Result<(), CallError> {
        type F = unsafe extern "C" fn(*mut JvmtiEnv, *const Capabilities) -> JvmtiError;
        // SAFETY: entry 142 is AddCapabilities with this signature (checked against the headers
        // by tests/jvmti_layout.rs); `caps` is a valid jvmtiCapabilities.
        let code = unsafe {
            let f: F = std::mem::transmute(self.entry(function::ADD_CAPABILITIES));
            f(self.env, caps)
        };
        check("AddCapabilities", code)
    }

    /// `GetPotentialCapabilities`.
    pub fn potential_capabilities(&self) -> Result<Capabilities, CallError> {
        type F = unsafe extern "C" fn(*mut JvmtiEnv, *mut Capabilities) -> JvmtiError;
        let mut caps = Capabilities::default();
        // SAFETY: entry 140 is GetPotentialCapabilities with this signature; `caps` is
        // writable.
        let code = unsafe {
            let f: F = std::mem::transmute(self.entry(function::GET_POTENTIAL_CAPABILITIES));
            f(self.env, &mut caps)
        };
        check("GetPotentialCapabilities", code).map(|()| caps)
    }

    /// `SetEventCallbacks`.
    pub fn set_event_callbacks(&self, callbacks: &EventCallbacks) -> Result<(), CallError> {
        type F = unsafe extern "C" fn(*mut JvmtiEnv, *const EventCallbacks, jint) -> JvmtiError;
        // SAFETY: entry 122 is SetEventCallbacks; the JVM copies `size` bytes of `callbacks`
        // and treats later slots as empty.
        let code = unsafe {
            let f: F = std::mem::transmute(self.entry(function::SET_EVENT_CALLBACKS));
            f(
                self.env,
                callbacks,
                std::mem::size_of::<EventCallbacks>() as jint,
            )
        };
        check("SetEventCallbacks", code)
    }

    /// `SetEventNotificationMode(JVMTI_ENABLE, event, NULL)`: enable `event` for all threads.
    pub fn enable_event(&self, event: c_int) -> Result<(), CallError> {
        type F = unsafe extern "C" fn(*mut JvmtiEnv, c_int, c_int, JThread, ...) -> JvmtiError;
        // SAFETY: entry 2 is the variadic SetEventNotificationMode; a null thread means all
        // threads, and no extra arguments are defined for any event.
        let code = unsafe {
            let f: F = std::mem::transmute(self.entry(function::SET_EVENT_NOTIFICATION_MODE));
            f(self.env, JVMTI_ENABLE, event, std::ptr::null_mut())
        };
        check("SetEventNotificationMode", code)
    }

    /// `GetSystemProperty(name)`, copied out and the JVM's buffer freed.
    pub fn system_property(&self, name: &CStr) -> Result<String, CallError> {
        type Get =
            unsafe extern "C" fn(*mut JvmtiEnv, *const c_char, *mut *mut c_char) -> JvmtiError;
        type Dealloc = unsafe extern "C" fn(*mut JvmtiEnv, *mut u8) -> JvmtiError;
        let mut value: *mut c_char = std::ptr::null_mut();
        // SAFETY: entry 131 is GetSystemProperty; `name` is NUL-terminated and `value` is a
        // writable pointer the JVM fills with memory from its Allocate.
        let code = unsafe {
            let f: Get = std::mem::transmute(self.entry(function::GET_SYSTEM_PROPERTY));
            f(self.env, name.as_ptr(), &mut value)
        };
        check("GetSystemProperty", code)?;
        if value.is_null() {
            return Ok(String::new());
        }
        // SAFETY: on success `value` is a NUL-terminated string from the JVM.
        let text = unsafe { CStr::from_ptr(value) }
            .to_string_lossy()
            .into_owned();
        // SAFETY: entry 47 is Deallocate; `value` came from the JVM's allocator and is freed
        // once.
        unsafe {
            let f: Dealloc = std::mem::transmute(self.entry(function::DEALLOCATE));
            f(self.env, value.cast());
        }
        Ok(text)
    }

    /// `DisposeEnvironment`: the JVM stops sending this environment's events.
    pub fn dispose(&self) -> Result<(), CallError> {
        type F = unsafe extern "C" fn(*mut JvmtiEnv) -> JvmtiError;
        // SAFETY: entry 127 is DisposeEnvironment.
        let code = unsafe {
            let f: F = std::mem::transmute(self.entry(function::DISPOSE_ENVIRONMENT));
            f(self.env)
        };
        check("DisposeEnvironment", code)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gc_capability_is_bit_31_of_the_first_word() {
        let caps = Capabilities::default().with(CAN_GENERATE_GARBAGE_COLLECTION_EVENTS);
        assert_eq!(caps.words, [1 << 31, 0, 0, 0]);
        assert!(caps.has(CAN_GENERATE_GARBAGE_COLLECTION_EVENTS));
        assert_eq!(std::mem::size_of::<Capabilities>(), 16);
    }

    #[test]
    fn callback_slots_follow_the_event_numbers() {
        assert_eq!(EventCallbacks::slot_offset(event::VM_INIT), 0);
        assert_eq!(
            EventCallbacks::slot_offset(event::GARBAGE_COLLECTION_START),
            31 * 8
        );
        assert_eq!(std::mem::size_of::<EventCallbacks>(), 33 * 8);
    }
}
