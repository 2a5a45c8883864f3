// Detection is its own target (StallDetection) so that the compiler keeps it pure; the agent's
// users see its types through StallAgentKit as before.
@_exported import StallDetection
