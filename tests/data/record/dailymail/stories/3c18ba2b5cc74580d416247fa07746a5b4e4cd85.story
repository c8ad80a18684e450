By Thomas Ashdown for MailOnline

An almost entirely white grey seal pup has been found sleeping on a Norfolk beach, delighting walkers and baffling experts who say the colouring is extremely rare.

The female pup, nicknamed Snowdrop by volunteers, was spotted near Horsey Gap by local walker Sandra Keeble, who at first thought it was a carrier bag caught on the sand.

Dr Priya Raman, a marine biologist at the Wensum Marine Institute, said: ‘It is not a true albino, because its eyes are dark, but leucism this striking is something I have never seen in the wild before, not even once.’

Dr Raman has asked photographers to keep their distance while the youngster builds up fat.

Keeble's husband went back with her to check that the animal was still safe.

Keeble said she was thrilled.

Could Snowdrop’s pale coat make her easier for predators to spot at sea?

Grey seal mothers feed their pups on very rich milk before leaving them to fend for themselves.

Dr Raman said the colouring is extremely rare among seals.

A similar pup was photographed on the Farne Islands by ranger Colin Maddox, the trust said.

Walkers near Horsey have been asked to stay behind rope barriers around the resting area.

@highlight

Pup nicknamed Snowdrop was found on a beach near Horsey Gap in Norfolk

@highlight

Walker Sandra Keeble thought at first it was a plastic bag

@highlight

Experts say the leucistic colouring is extremely rare

@highlight

The pup appears healthy and is being watched by volunteers