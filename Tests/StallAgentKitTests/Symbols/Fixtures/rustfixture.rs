// Built at test time with rustc in both manglings. The main thread blocks reading a pipe
// inside a closure called from a generic method of a trait impl in a nested module.
pub mod server {
    pub mod queue {
        use std::io::Read;

        pub struct Worker<T> {
            pub items: Vec<T>,
        }

        pub trait Drain {
            fn drain_all(&mut self) -> usize;
        }

        impl<T: Copy + Into<u64>> Drain for Worker<T> {
            #[inline(never)]
            fn drain_all(&mut self) -> usize {
                let mut total = 0u64;
                let wait = |fd: &mut std::fs::File| -> usize {
                    let mut byte = [0u8; 1];
                    std::hint::black_box(fd.read(&mut byte).unwrap_or(0))
                };
                let mut file = super::super::pipe_reader();
                for item in &self.items {
                    total += (*item).into();
                }
                wait(&mut file) + total as usize
            }
        }
    }
}

#[inline(never)]
fn pipe_reader() -> std::fs::File {
    use std::os::unix::io::FromRawFd;
    let mut fds = [0i32; 2];
    extern "C" {
        fn pipe(fds: *mut i32) -> i32;
    }
    unsafe {
        pipe(fds.as_mut_ptr());
        std::mem::forget(std::fs::File::from_raw_fd(fds[1]));
        std::fs::File::from_raw_fd(fds[0])
    }
}

fn main() {
    use server::queue::Drain;
    let mut worker = server::queue::Worker { items: vec![1u32, 2, 3] };
    println!("ready pid={}", std::process::id());
    let n = worker.drain_all();
    std::process::exit(n as i32);
}
